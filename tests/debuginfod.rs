//! Debug info from debuginfod servers: a program and its library are recorded as stripped
//! copies, and Debian's `debuginfod` serves the unstripped ones; the report must name what the
//! unstripped binaries name (functions, inline frames, source lines). Stand-in servers play
//! the ones that fail: down, silent, serving another build id, serving too much.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{build_id_hex, copy_executable, rperf, run, scratch, stderr, stdout};

/// The test program and its library, unstripped (`full`) and stripped (`run`, where they
/// were recorded from).
struct Subject {
    dir: PathBuf,
    full: PathBuf,
    run: PathBuf,
    data: PathBuf,
    main_id: String,
    lib_id: String,
}

const PROGRAMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs");

fn gcc(args: &[&str]) {
    let o = run(Command::new("gcc").args(["-O2", "-g", "-fno-omit-frame-pointer"]).args(args));
    assert!(o.status.success(), "gcc {args:?}: {}", stderr(&o));
}

/// Builds the subject in scratch folder `name` and records the stripped copies.
fn subject(name: &str) -> Subject {
    subject_built(name, &[])
}

/// `subject`, with `flags` added to gcc's.
fn subject_built(name: &str, flags: &[&str]) -> Subject {
    let dir = scratch(name);
    let (full, run_dir) = (dir.join("full"), dir.join("run"));
    std::fs::create_dir_all(&full).unwrap();
    std::fs::create_dir_all(&run_dir).unwrap();
    let lib = full.join("libserved.so");
    let main = full.join("served_main");
    let lib_src = format!("{PROGRAMS}/served_lib.c");
    gcc(&[flags, &["-shared", "-fPIC", &lib_src, "-o", lib.to_str().unwrap()]].concat());
    gcc(&[
        flags,
        &[
            &format!("{PROGRAMS}/served_main.c"),
            "-o",
            main.to_str().unwrap(),
            "-L",
            full.to_str().unwrap(),
            "-lserved",
            "-Wl,-rpath,$ORIGIN",
        ],
    ]
    .concat());
    for f in [&lib, &main] {
        let copy = run_dir.join(f.file_name().unwrap());
        copy_executable(f, &copy);
        let o = run(Command::new("strip").arg("--strip-all").arg(&copy));
        assert!(o.status.success(), "strip: {}", stderr(&o));
    }
    let data = dir.join("perf.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(run_dir.join("served_main"))
        .arg("1"));
    assert!(o.status.success(), "{}", stderr(&o));
    let main_id = build_id_hex(&main);
    let lib_id = build_id_hex(&lib);
    assert_eq!(main_id, build_id_hex(&run_dir.join("served_main")), "strip keeps the build id");
    Subject { dir, full, run: run_dir, data, main_id, lib_id }
}

/// The report the tests compare: every function with its source line, and call graphs with
/// inline frames.
fn report(data: &Path, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut cmd = rperf();
    cmd.env_remove("DEBUGINFOD_URLS").env("RPERF_PROGRESS", "always");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd
        .args(["report", "--sort", "dso,symbol,srcline", "-g", "caller", "--percent-limit", "0", "-i"])
        .arg(data)
        .args(extra))
}

/// A free port on the loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The HTTP status of `GET url_path` on `port`, when the server answers.
fn status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Debian's debuginfod, serving the binaries of one folder.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts it on `folder` and waits until it serves each build id of `ids`.
    fn start(folder: &Path, ids: &[&str]) -> Server {
        let port = free_port();
        let db = folder.with_extension("sqlite");
        let child = Command::new("debuginfod")
            .arg("-F")
            .arg(folder)
            .args(["-p", &port.to_string(), "-d"])
            .arg(&db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect(
                "debuginfod (Debian's package debuginfod) must be installed: scripts/test.sh installs it",
            );
        let server = Server { child, url: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + Duration::from_secs(60);
        for id in ids {
            while status(port, &format!("/buildid/{id}/debuginfo")) != Some(200) {
                assert!(Instant::now() < deadline, "debuginfod did not serve {id} within 60 s");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// What a stand-in server does with each request.
#[derive(Clone)]
enum Behaviour {
    /// Reads the request and never answers.
    Silent,
    /// Answers every request with these bytes.
    Serve(Arc<Vec<u8>>),
    /// Answers with an endless body, no length given.
    Endless,
    /// Announces a body of this many bytes.
    Announce(u64),
    /// Sends a body of a megabyte one byte a second.
    Trickle,
}

/// A stand-in server; counts the connections made to it.
struct StandIn {
    url: String,
    connections: Arc<AtomicUsize>,
}

fn stand_in(behaviour: Behaviour) -> StandIn {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let behaviour = behaviour.clone();
            std::thread::spawn(move || answer(conn, behaviour));
        }
    });
    StandIn { url, connections }
}

fn answer(mut conn: TcpStream, behaviour: Behaviour) {
    let mut request = Vec::new();
    let mut byte = [0u8; 1];
    while !request.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
        request.push(byte[0]);
    }
    match behaviour {
        Behaviour::Silent => std::thread::sleep(Duration::from_secs(120)),
        Behaviour::Serve(bytes) => {
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", bytes.len());
            conn.write_all(head.as_bytes()).ok();
            conn.write_all(&bytes).ok();
        }
        Behaviour::Endless => {
            conn.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").ok();
            let zeros = vec![0u8; 1 << 16];
            while conn.write_all(&zeros).is_ok() {}
        }
        Behaviour::Announce(len) => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n");
            conn.write_all(head.as_bytes()).ok();
            conn.write_all(&[0u8; 4096]).ok();
        }
        Behaviour::Trickle => {
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n").ok();
            while conn.write_all(b"\x7f").is_ok() {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// The non-empty files under `dir`, as paths relative to it.
fn kept_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(sub.path()).into_iter().flatten().flatten() {
            if f.metadata().is_ok_and(|m| m.len() > 0) {
                out.push(format!(
                    "{}/{}",
                    sub.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn stripped_binaries_are_named_as_their_unstripped_copies_with_a_server_then_from_the_cache() {
    let s = subject("debuginfod-named");
    let cache = s.dir.join("cache");
    let cache_str = cache.to_str().unwrap().to_string();

    let without = report(&s.data, &[], &["--no-debuginfod"]);
    assert!(without.status.success(), "{}", stderr(&without));
    for absent in ["main_outer", "main_inner", "lib_inner", "served_main.c:", "served_lib.c:"] {
        assert!(!stdout(&without).contains(absent), "the stripped copies name {absent} on their own");
    }

    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);
    let url = server.url.clone();
    let env = [("DEBUGINFOD_URLS", url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache_str.as_str())];
    let cold = report(&s.data, &env, &[]);
    let text = stdout(&cold);
    assert!(cold.status.success(), "{}", stderr(&cold));
    for named in ["main_outer", "main_inner", "lib_outer", "lib_inner", "served_main.c:", "served_lib.c:"] {
        assert!(text.contains(named), "{named} is not named with the server's debug info:\n{text}");
    }
    assert!(stderr(&cold).contains("debuginfod: fetched 2 files"), "{}", stderr(&cold));
    assert!(stderr(&cold).contains("files looked up"), "no progress line: {}", stderr(&cold));
    for id in [&s.main_id, &s.lib_id] {
        let kept = cache.join(id).join("debuginfo");
        let meta = std::fs::metadata(&kept).unwrap_or_else(|e| panic!("{}: {e}", kept.display()));
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077, 0);
    }

    // The server is gone: the cache answers, and nothing is asked of the network.
    drop(server);
    let warm = report(&s.data, &env, &[]);
    assert_eq!(stdout(&warm), text, "the warm report differs from the cold one");
    assert!(!stderr(&warm).contains("failed"), "the warm report asked a server: {}", stderr(&warm));
    assert!(!stderr(&warm).contains("debuginfod: fetched"), "{}", stderr(&warm));
    // elfutils' own client finds what rperf fetched: the cache is shared with gdb and perf.
    let find = run(Command::new("debuginfod-find").envs(env).args(["debuginfo", &s.main_id]));
    assert!(find.status.success(), "debuginfod-find: {}", stderr(&find));
    assert_eq!(stdout(&find).trim(), cache.join(&s.main_id).join("debuginfo").to_str().unwrap());

    // The unstripped binaries in place of the stripped ones name the same.
    for f in ["served_main", "libserved.so"] {
        copy_executable(&s.full.join(f), &s.run.join(f));
    }
    let local = report(&s.data, &[], &["--no-debuginfod"]);
    assert_eq!(stdout(&local), text, "the report with local debug info differs");
}

#[test]
fn a_server_that_is_down_or_silent_is_asked_once_and_the_next_one_serves() {
    let s = subject("debuginfod-down");
    let cache = s.dir.join("cache");
    let down = format!("http://127.0.0.1:{}", free_port());
    let silent = stand_in(Behaviour::Silent);
    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);
    let urls = format!("{down} {} {}", silent.url, server.url);
    let env = [("DEBUGINFOD_TIMEOUT", "1"), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&s.data, &env, &[&format!("--debuginfod={urls}")]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(stdout(&o).contains("main_inner") && stdout(&o).contains("lib_inner"), "{}", stdout(&o));
    assert!(err.contains(&format!("{down} failed: connection refused")), "{err}");
    assert!(err.contains(&format!("{} failed: no answer in time", silent.url)), "{err}");
    assert_eq!(silent.connections.load(Ordering::SeqCst), 1, "the silent server was asked more than once");
}

#[test]
fn a_file_with_another_build_id_is_discarded() {
    let s = subject("debuginfod-wrong-id");
    let cache = s.dir.join("cache");
    // Whatever is asked, the library's debug file comes back.
    let lib = std::fs::read(s.full.join("libserved.so")).unwrap();
    let liar = stand_in(Behaviour::Serve(Arc::new(lib)));
    let env = [("DEBUGINFOD_URLS", liar.url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("with build id {}, not the {} asked for; discarded", s.lib_id, s.main_id)),
        "{err}"
    );
    assert!(stdout(&o).contains("lib_inner"), "the library's own file is used: {}", stdout(&o));
    assert!(!stdout(&o).contains("main_outer"), "{}", stdout(&o));
    let kept = kept_files(&cache);
    assert!(
        !kept.iter().any(|f| f.starts_with(&s.main_id)),
        "a file with another build id was kept: {kept:?}"
    );
    // The refused file is not remembered as one no server has: a server that has it is asked.
    assert!(!err.contains("no server had"), "{err}");
    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    assert!(stdout(&o).contains("main_outer"), "{}\n{}", stdout(&o), stderr(&o));
}

/// A server sending a byte a second is given up once it runs below 100 KiB/s for
/// DEBUGINFOD_TIMEOUT seconds, as elfutils gives it up; the next server serves. A report
/// killed during such a download leaves a partial file, which the next download of that file
/// removes.
#[test]
fn a_server_too_slow_is_given_up_and_a_killed_download_is_cleaned_up() {
    let s = subject("debuginfod-slow");
    let cache = s.dir.join("cache");
    let slow = stand_in(Behaviour::Trickle);
    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);
    let urls = format!("{} {}", slow.url, server.url);
    let env = [
        ("DEBUGINFOD_URLS", urls.as_str()),
        ("DEBUGINFOD_TIMEOUT", "2"),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let started = Instant::now();
    let o = report(&s.data, &env, &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(err.contains(&format!("{} failed: the download ran at", slow.url)), "{err}");
    assert!(
        err.contains("below 100 KiB/s (DEBUGINFOD_TIMEOUT)") && err.contains(", fetching the debuginfo of"),
        "{err}"
    );
    assert!(stdout(&o).contains("main_inner") && stdout(&o).contains("lib_inner"), "{}", stdout(&o));

    // Killed in the middle of the slow download.
    let cache = s.dir.join("cache-killed");
    let mut cmd = rperf();
    cmd.env("DEBUGINFOD_URLS", &slow.url)
        .env("DEBUGINFOD_CACHE_PATH", &cache)
        .env("DEBUGINFOD_TIMEOUT", "60")
        .args(["report", "--sort", "dso,symbol,srcline", "-i"])
        .arg(&s.data)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let partial = |c: &Path| -> Vec<String> {
        let mut v = Vec::new();
        for sub in std::fs::read_dir(c).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(sub.path()).into_iter().flatten().flatten() {
                let n = f.file_name().to_string_lossy().into_owned();
                if n.starts_with(".debuginfo.") {
                    v.push(n);
                }
            }
        }
        v
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while partial(&cache).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!partial(&cache).is_empty(), "the killed download left no partial file to clean");
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(partial(&cache), Vec::<String>::new(), "the partial file was left");
}

#[test]
fn a_file_over_the_size_limit_is_not_fetched() {
    let s = subject("debuginfod-huge");
    let cache = s.dir.join("cache");
    let endless = stand_in(Behaviour::Endless);
    let announced = stand_in(Behaviour::Announce(1 << 40));
    let urls = format!("{} {}", endless.url, announced.url);
    let env = [
        ("DEBUGINFOD_URLS", urls.as_str()),
        ("DEBUGINFOD_MAXSIZE", "2000000"),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let o = report(&s.data, &env, &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("{} has the debuginfo of", endless.url)), "{err}");
    assert!(err.contains(&format!("{} has the debuginfo of", announced.url)), "{err}");
    assert!(err.contains("over the limit of 2000000 bytes (DEBUGINFOD_MAXSIZE)"), "{err}");
    assert_eq!(kept_files(&cache), Vec::<String>::new(), "part of a file was kept");
    for sub in std::fs::read_dir(&cache).unwrap().flatten() {
        let left: Vec<_> = std::fs::read_dir(sub.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(
            left.iter().all(|n| !n.to_string_lossy().starts_with('.')),
            "a temporary file was left: {left:?}"
        );
    }
}

#[test]
fn the_cache_follows_the_shared_machine_rules() {
    use std::os::unix::fs::PermissionsExt;
    let s = subject("debuginfod-cache");
    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);

    // A cache folder others can write to is not used, and nothing is written there.
    let open = s.dir.join("open-cache");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", open.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("debuginfod: not used: the cache folder"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);

    // A cache folder reached through a link another user owns in a sticky folder is not used,
    // and nothing is made where the link leads.
    let sticky = s.dir.join("tmp");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let target = s.dir.join("roots-folder");
    std::fs::create_dir(&target).unwrap();
    let link = sticky.join("debuginfod");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let st = Command::new("chown").args(["-h", "65534:65534"]).arg(&link).status().unwrap();
    assert!(st.success());
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", link.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("belongs to another user (uid 65534)"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);

    // A link planted where a fetched file goes is replaced, never written through.
    let cache = s.dir.join("cache");
    let folder = cache.join(&s.main_id);
    std::fs::create_dir_all(&folder).unwrap();
    for d in [&cache, &folder] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let victim = s.dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, folder.join("debuginfo")).unwrap();
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("main_inner"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(std::fs::symlink_metadata(folder.join("debuginfo")).unwrap().file_type().is_file());
}

#[test]
fn binaries_missing_here_are_fetched_whole_as_for_a_recording_from_another_machine() {
    let s = subject("debuginfod-elsewhere");
    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);
    let here = report(&s.data, &[], &["--no-debuginfod"]);
    std::fs::remove_dir_all(&s.run).unwrap();
    let cache = s.dir.join("cache");
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&s.data, &env, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    for named in ["main_inner", "lib_inner", "served_main.c:", "served_lib.c:"] {
        assert!(stdout(&o).contains(named), "{named} is not named:\n{}", stdout(&o));
    }
    assert!(!stdout(&here).contains("main_inner"));
    for id in [&s.main_id, &s.lib_id] {
        assert!(cache.join(id).join("executable").is_file(), "{id}/executable was not fetched");
    }
}

#[test]
fn perf_dwarf_stacks_through_binaries_missing_here_unwind_with_the_fetched_ones() {
    // Without frame pointers, only the binaries' unwind tables lead through their frames.
    let s = subject_built("debuginfod-dwarf", &["-fomit-frame-pointer"]);
    let data = s.dir.join("perf-dwarf.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "--call-graph", "dwarf", "-F", "1000", "-o"])
        .arg(&data)
        .arg(s.run.join("served_main"))
        .arg("0.5"));
    assert!(o.status.success(), "perf record: {}", stderr(&o));
    let server = Server::start(&s.full, &[&s.main_id, &s.lib_id]);
    std::fs::remove_dir_all(&s.run).unwrap();
    let cache = s.dir.join("cache");
    let env = [("DEBUGINFOD_URLS", server.url.as_str()), ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap())];
    let o = report(&data, &env, &["--format", "folded"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let folded = stdout(&o);
    for chain in [";main;main_outer.constprop.0;main_inner ", ";main;lib_outer;lib_inner "] {
        assert!(folded.contains(chain), "no stack with {chain:?}:\n{folded}");
    }
}
