//! Launching the profiled command so that its counters start at exec, and handling the signals
//! that stop a recording.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::Error;

/// A child waiting for the go-ahead before it execs the command: its counters are opened
/// on it first, enabled at its exec.
pub struct Launched {
    /// The child's pid.
    pub pid: i32,
    go: Option<OwnedFd>,
    /// std's spawn, which returns once the child has exec'd (or failed to), on a thread of its
    /// own since the child waits for the go-ahead first.
    spawned: Option<std::thread::JoinHandle<std::io::Result<std::process::Child>>>,
    command: String,
}

/// A pipe, both ends close-on-exec: (read, write).
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn find_program(name: &str) -> Option<String> {
    if name.contains('/') {
        return Some(name.to_string());
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    path.split(':').map(|d| format!("{d}/{name}")).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        })
    })
}

impl Launched {
    /// Starts a child (std's `Command`) that waits for the go-ahead, then execs `argv`.
    pub fn prepare(argv: &[String]) -> Result<Launched, Error> {
        use std::os::unix::process::CommandExt;
        let command = argv.first().cloned().unwrap_or_default();
        let spawn_err = |e| Error::Spawn { command: command.clone(), source: e };
        let program = find_program(&command)
            .ok_or_else(|| spawn_err(std::io::Error::from(std::io::ErrorKind::NotFound)))?;
        let (go_r, go_w) = pipe().map_err(spawn_err)?;
        let (pid_r, pid_w) = pipe().map_err(spawn_err)?;
        let mut cmd = std::process::Command::new(program);
        cmd.arg0(&command).args(&argv[1..]);
        let (go_r_fd, go_w_fd, pid_w_fd) = (go_r.as_raw_fd(), go_w.as_raw_fd(), pid_w.as_raw_fd());
        // SAFETY: between fork and exec the child only makes async-signal-safe calls (close,
        // getpid, write, read, signal) on descriptors made before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // Only the parent may hold the write end: if it drops it without the go-ahead
                // (recording failed to start), read sees EOF and the child exits.
                libc::close(go_w_fd);
                let pid = libc::getpid();
                libc::write(pid_w_fd, (&pid as *const i32).cast(), 4);
                libc::close(pid_w_fd);
                let mut b = 0u8;
                if libc::read(go_r_fd, (&mut b as *mut u8).cast(), 1) != 1 {
                    return Err(std::io::Error::from_raw_os_error(libc::ECANCELED));
                }
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        let spawned = std::thread::spawn(move || {
            let child = cmd.spawn();
            // The child has its copies (or was never made): the reader below sees EOF then.
            drop((go_r, pid_w));
            child
        });
        let mut pid = [0u8; 4];
        match std::fs::File::from(pid_r).read_exact(&mut pid) {
            Ok(()) => {
                let pid = i32::from_ne_bytes(pid);
                Ok(Launched { pid, go: Some(go_w), spawned: Some(spawned), command })
            }
            Err(_) => {
                let e = spawned.join().ok().and_then(Result::err);
                Err(spawn_err(e.unwrap_or_else(|| std::io::Error::other("the command did not start"))))
            }
        }
    }

    /// Lets the child exec; fails if exec failed.
    pub fn start(&mut self) -> Result<(), Error> {
        let go = self.go.take().expect("start called once");
        std::fs::File::from(go).write_all(b"g").ok();
        match self.spawned.take().map(|s| s.join()) {
            // std reaps a child whose exec failed.
            Some(Ok(Err(e))) => Err(Error::Spawn { command: self.command.clone(), source: e }),
            _ => Ok(()),
        }
    }

    /// Non-blocking check: the exit code (128+signal for a killed child) once it has ended.
    pub fn try_wait(&self) -> Option<i32> {
        let mut status = 0;
        // SAFETY: waitpid on our own child with a local status word.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        (r == self.pid).then(|| decode_status(status))
    }

    /// Blocks until the child ends and returns its exit code.
    pub fn wait(&self) -> i32 {
        let mut status = 0;
        loop {
            // SAFETY: as above.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                return decode_status(status);
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return 127;
            }
        }
    }

    /// Blocks until the child ends; returns its exit code and its user and system CPU seconds.
    pub fn wait_with_times(&self) -> (i32, f64, f64) {
        let mut status = 0;
        // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: as above.
            let r = unsafe { libc::wait4(self.pid, &mut status, 0, &mut ru) };
            if r == self.pid {
                let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
                return (decode_status(status), t(ru.ru_utime), t(ru.ru_stime));
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return (127, 0.0, 0.0);
            }
        }
    }

    /// Non-blocking check for exit, with CPU times as for `wait_with_times`.
    pub fn try_wait_with_times(&self) -> Option<(i32, f64, f64)> {
        let mut status = 0;
        // SAFETY: as in wait_with_times.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut ru) };
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (r == self.pid).then(|| (decode_status(status), t(ru.ru_utime), t(ru.ru_stime)))
    }

    /// Sends `sig` to the child.
    pub fn kill(&self, sig: i32) {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(self.pid, sig) };
    }
}

impl Drop for Launched {
    /// A child that never got the go-ahead exits when the pipe closes (std reaps it).
    fn drop(&mut self) {
        if let Some(go) = self.go.take() {
            drop(go);
            if let Some(s) = self.spawned.take() {
                s.join().ok();
            }
        }
    }
}

fn decode_status(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);
static STOP_COUNT: AtomicI32 = AtomicI32::new(0);
static FROM_USER: AtomicBool = AtomicBool::new(false);

/// The wake pipe's ends (-1 until `install_signal_handlers` makes it). The recording loop waits
/// for ring-buffer data, a tick, or a byte on this pipe: the signal handlers write one, and so
/// does `wake`, so that a stop or the command's exit ends the wait at once whichever thread the
/// signal reached (a signal handled on another thread does not interrupt the loop's poll).
static WAKE_READ: AtomicI32 = AtomicI32::new(-1);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// Ends the recording loop's current wait (see `WAKE_READ`). Async-signal-safe.
pub fn wake() {
    let fd = WAKE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: errno is this thread's; it is saved and restored around write(), which is
        // async-signal-safe, on a non-blocking pipe this module owns (a full pipe already wakes).
        unsafe {
            let errno = libc::__errno_location();
            let saved = *errno;
            libc::write(fd, [1u8].as_ptr().cast(), 1);
            *errno = saved;
        }
    }
}

/// The descriptor the recording loop polls to hear `wake`, once the handlers are installed.
pub fn wake_fd() -> Option<i32> {
    Some(WAKE_READ.load(Ordering::SeqCst)).filter(|&fd| fd >= 0)
}

/// Empties the wake pipe after a wait. Recordings of one process share the pipe, so one may
/// take another's wake-up: that one then notices at its next tick.
pub fn clear_wakes() {
    let Some(fd) = wake_fd() else { return };
    let mut buf = [0u8; 64];
    // SAFETY: reads into a local buffer from the non-blocking pipe this module owns.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

fn make_wake_pipe() {
    static MADE: std::sync::Once = std::sync::Once::new();
    MADE.call_once(|| {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own; they are kept for the
        // life of the process.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
            WAKE_READ.store(fds[0], Ordering::SeqCst);
            WAKE_WRITE.store(fds[1], Ordering::SeqCst);
        }
    });
}

extern "C" fn on_stop(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
    STOP_COUNT.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
    let code = unsafe { (*info).si_code };
    // Signals from the terminal (SI_KERNEL) reach the whole process group already; ones sent
    // with kill() (SI_USER and friends, <= 0) are meant for rperf and forwarded to the command.
    FROM_USER.store(code <= 0, Ordering::SeqCst);
    wake();
}

extern "C" fn on_child(_: libc::c_int) {
    wake();
}

/// Installs the handlers that turn SIGINT/SIGTERM/SIGHUP into a clean stop and let SIGCHLD
/// wake the poll loop. A SIGHUP ignored when rperf started (`nohup`, as when recording goes on
/// after the phone's USB cable is pulled) stays ignored.
pub fn install_signal_handlers() {
    make_wake_pipe();
    // SAFETY: installing handlers that only touch atomics (async-signal-safe); the query of
    // SIGHUP's disposition writes into a zeroed sigaction of ours.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_stop as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        let mut hup: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut hup);
        let hup_ignored = hup.sa_flags & libc::SA_SIGINFO == 0 && hup.sa_sigaction == libc::SIG_IGN;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            if sig != libc::SIGHUP || !hup_ignored {
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        let mut sc: libc::sigaction = std::mem::zeroed();
        sc.sa_sigaction = on_child as *const () as usize;
        libc::sigaction(libc::SIGCHLD, &sc, std::ptr::null_mut());
    }
}

/// The stop signal received so far (0 for none), how many arrived, and whether it was sent with
/// kill() rather than by the terminal.
pub fn stop_signal() -> (i32, i32, bool) {
    (STOP_SIGNAL.load(Ordering::SeqCst), STOP_COUNT.load(Ordering::SeqCst), FROM_USER.load(Ordering::SeqCst))
}

/// Clears the recorded stop signal (each recording starts fresh).
pub fn reset_stop_signal() {
    STOP_SIGNAL.store(0, Ordering::SeqCst);
    STOP_COUNT.store(0, Ordering::SeqCst);
}

/// Hands descriptors to a command at fixed numbers: each `(fd, number)` is open as `number`
/// in the command, without close-on-exec (how a recording running as another user gets the
/// output file and the stop pipe: `--out-fd 3 --stop-fd 4`). Numbers must be under 10.
pub fn pass_fds(cmd: &mut std::process::Command, fds: &[(i32, i32)]) {
    use std::os::unix::process::CommandExt;
    let fds = fds.to_vec();
    // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2) on descriptors
    // this process owns. Each first moves to 10 or above, so that no target number overwrites
    // a descriptor still to be moved; dup2 makes the targets without close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut moved = [0i32; 8];
            for (i, &(fd, _)) in fds.iter().enumerate().take(8) {
                moved[i] = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
                if moved[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, &(_, to)) in fds.iter().enumerate().take(8) {
                if libc::dup2(moved[i], to) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// This process's real and effective user ids.
pub fn user_ids() -> (u32, u32) {
    // SAFETY: getuid and geteuid cannot fail.
    unsafe { (libc::getuid(), libc::geteuid()) }
}
