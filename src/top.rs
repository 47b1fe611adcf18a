//! `rperf top`: a live function table, like perf top. A recording runs in the background into a
//! private temporary file (rperf's own samples left out); every refresh reads the records
//! written since the last one (the file is readable at every flush) through a live report
//! (`rperf_report::Live`) and shows the top rows of the report's table. Keys: q quits,
//! p (or space) pauses the display, j/k or the arrows move the selection, d zooms into the
//! selected row's binary, t into its busiest thread, z zooms out.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use rperf_record::{CallGraph, Rate, RecordOptions, Recorder, Target};
use rperf_report::{Filters, Format, ReportOptions, SortKey};

/// Show the hottest functions live, refreshing (q quits, p pauses, d/t zoom into the selected
/// row's binary or thread, z zooms out).
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  rperf top\n  rperf top -p 1234 -g\n  rperf top -g dwarf -- ./app\n  rperf top --app com.example.app --sort comm,dso,symbol"
)]
pub struct TopArgs {
    #[command(flatten)]
    target: crate::target_args::TargetArgs,
    /// Events to sample (see `rperf list`).
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    events: Vec<String>,
    /// Samples per second.
    #[arg(short = 'F', long = "freq", default_value_t = 1000)]
    freq: u64,
    /// Record call chains and show the selected row's callers: dwarf[,STACK_SIZE] (copies of
    /// the user stack, unwound at each refresh; what -g alone means, as for record) or fp
    /// (frame pointers: cheaper, where the code keeps them).
    #[arg(long = "call-graph", value_name = "MODE")]
    call_graph: Option<String>,
    /// Sort keys, as for rperf report.
    #[arg(long = "sort", default_value = "dso,symbol")]
    sort: String,
    /// Seconds between refreshes.
    #[arg(long = "refresh", value_name = "SECONDS", default_value_t = 1.0)]
    refresh: f64,
    /// Rows shown.
    #[arg(long = "rows", default_value_t = 20)]
    rows: usize,
    /// Stop after SECONDS.
    #[arg(long = "duration", value_name = "SECONDS", value_parser = crate::target_args::parse_seconds)]
    duration: Option<Duration>,
}

/// The private folder of one `rperf top`, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// One row of the table: its text and, where the sort keys give them, binary and function.
struct Row {
    text: String,
    dso: Option<String>,
    func: Option<u32>,
}

/// Runs `rperf top`.
pub fn run(a: TopArgs) -> anyhow::Result<i32> {
    let target = if a.target.pids.is_none()
        && a.target.tids.is_none()
        && a.target.app.is_none()
        && a.target.command.is_empty()
    {
        Target::SystemWide
    } else {
        a.target.resolve("top")?
    };
    let sort = a
        .sort
        .split(',')
        .map(|k| SortKey::parse(k).with_context(|| format!("unknown sort key '{k}'")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let events = crate::target_args::parse_events(&a.events)?;
    let call_graph =
        a.call_graph.as_deref().map(crate::record::parse_call_graph).transpose()?.unwrap_or(CallGraph::None);
    let dir = std::env::temp_dir().join(format!("rperf-top-{}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let scratch = Scratch(dir);
    let data = scratch.0.join("perf.data");
    let opts = RecordOptions {
        events,
        rate: Some(Rate::Frequency(a.freq)),
        call_graph,
        duration: a.duration,
        cmdline: vec!["rperf".into(), "top".into()],
        exclude_perf: true,
        post_unwind: false,
        // Each refresh shows what was sampled up to half a refresh before.
        tick: Some(Duration::from_secs_f64(a.refresh.max(0.05) / 2.0)),
        ..RecordOptions::new(target, data.clone())
    };
    let recording = Recorder::start(opts, Box::new(|_| {}))?;
    let _tty = rperf_record::tty::RawTerminal::enter();
    let mut view = View {
        sort,
        call_graph: call_graph != CallGraph::None,
        filters: Filters::default(),
        selected: 0,
        paused: false,
        note: String::new(),
        live: None,
    };
    let refresh = Duration::from_secs_f64(a.refresh.max(0.05));
    let mut next = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let mut header = String::from("rperf top: starting");
    // The profile the table shows, for callers and zooming.
    let mut shown: Option<rperf_report::Profile> = None;
    let mut out = std::io::stdout();
    loop {
        if recording.is_finished() {
            break;
        }
        if Instant::now() >= next {
            if !view.paused {
                (header, rows, shown) = view.read(&data, a.rows);
            }
            draw(&mut out, &header, &rows, &view, shown.as_ref())?;
            next = Instant::now() + refresh;
        }
        match rperf_record::tty::read_key(next.saturating_duration_since(Instant::now())) {
            Some(b'q') => break,
            Some(key) if view.key(key, &rows, shown.as_ref()) => next = Instant::now(),
            _ => {}
        }
    }
    recording.stop();
    let result = recording.summary();
    writeln!(out, "\x1b[0m")?;
    result?;
    Ok(0)
}

/// What the table shows: sort keys, zoom filters, selection; and the recording read so far.
struct View {
    sort: Vec<SortKey>,
    call_graph: bool,
    filters: Filters,
    selected: usize,
    paused: bool,
    note: String,
    /// The report of the recording, brought up to date at each refresh; read again from
    /// the start when a zoom changes the filters.
    live: Option<rperf_report::Live>,
}

impl View {
    /// Acts on a key other than q; true when the table is to be drawn again.
    fn key(&mut self, key: u8, rows: &[Row], shown: Option<&rperf_report::Profile>) -> bool {
        match key {
            b'p' | b' ' => self.paused = !self.paused,
            b'j' | b'B' => self.selected = (self.selected + 1).min(rows.len().saturating_sub(1)),
            b'k' | b'A' => self.selected = self.selected.saturating_sub(1),
            b'd' => self.zoom_dso(rows.get(self.selected)),
            b't' => self.zoom_thread(shown, rows.get(self.selected)),
            b'z' => {
                self.filters = Filters::default();
                self.note.clear();
            }
            _ => return false,
        }
        if matches!(key, b'd' | b't' | b'z') {
            self.live = None;
        }
        true
    }

    fn options(&self, data: &Path) -> ReportOptions {
        ReportOptions {
            input: data.to_path_buf(),
            sort: self.sort.clone(),
            filters: self.filters.clone(),
            format: Format::Text,
            // A refresh never waits on a network: top names code of this machine.
            debuginfod: rperf_report::Debuginfod::Off,
            ..Default::default()
        }
    }

    /// The header line, the top `n` rows of the report of what is recorded so far, and its
    /// profile. Only the records written since the last refresh are read.
    fn read(&mut self, data: &Path, n: usize) -> (String, Vec<Row>, Option<rperf_report::Profile>) {
        let opts = self.options(data);
        let waiting = || ("rperf top: waiting for samples".into(), Vec::new(), None);
        if self.live.is_none() {
            // The recording's metadata may not be written yet.
            self.live = rperf_report::Live::open(&opts).ok();
        }
        let Some(live) = &mut self.live else { return waiting() };
        if live.update().is_err() {
            self.live = None;
            return waiting();
        }
        let profile = live.profile();
        let table = profile.table(&opts, n);
        // Binaries by file name, as perf top shows them, so that function names get the width.
        let dso_column = opts
            .sort
            .contains(&SortKey::Dso)
            .then(|| table.titles.iter().position(|t| t == SortKey::Dso.title()))
            .flatten();
        let base = |d: &str| d.rsplit('/').next().unwrap_or(d).to_string();
        let mut cells: Vec<Vec<String>> = table.rows.iter().map(|r| r.cells.clone()).collect();
        if let Some(c) = dso_column {
            for (row, r) in cells.iter_mut().zip(&table.rows) {
                if let (Some(cell), Some(d)) = (row.get_mut(c), &r.dso) {
                    *cell = rperf_symbols::text::printable(&base(d)).into_owned();
                }
            }
        }
        let mut widths: Vec<usize> = table.titles.iter().map(|t| t.chars().count()).collect();
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |row: &[String]| {
            let last = row.len().saturating_sub(1);
            let cell = |(i, c): (usize, &String)| {
                if i == last {
                    c.clone()
                } else {
                    format!("{c:<w$}", w = widths[i])
                }
            };
            row.iter().enumerate().map(cell).collect::<Vec<_>>().join("  ")
        };
        let rows = cells
            .iter()
            .zip(table.rows)
            .map(|(c, r)| Row { text: line(c), dso: r.dso, func: r.func })
            .collect();
        let header = format!("rperf top: {} samples\n{}", table.samples, line(&table.titles));
        (header, rows, Some(profile))
    }

    fn zoom_dso(&mut self, row: Option<&Row>) {
        match row.and_then(|r| r.dso.clone()) {
            Some(d) => {
                self.note = format!("zoom: binary {d}");
                self.filters.dsos = vec![d];
            }
            None => self.note = "d zooms into a binary: sort by dso".into(),
        }
        self.selected = 0;
    }

    /// Zooms into the thread with the most samples of the selected row's function.
    fn zoom_thread(&mut self, shown: Option<&rperf_report::Profile>, row: Option<&Row>) {
        let Some(func) = row.and_then(|r| r.func) else {
            self.note = "t zooms into a thread: sort by symbol".into();
            return;
        };
        let Some(p) = shown else { return };
        let mut by_tid: std::collections::HashMap<i32, u64> = Default::default();
        if let Some(s) = p.main_section() {
            for c in &s.stacks {
                if p.stack_funcs[c.stack as usize].first() == Some(&func) {
                    let w = by_tid.entry(c.thread.tid).or_default();
                    *w = w.saturating_add(c.weight);
                }
            }
        }
        if let Some((&tid, _)) = by_tid.iter().max_by_key(|(_, w)| **w) {
            self.note = format!("zoom: thread {tid}");
            self.filters.tids = vec![tid];
            self.selected = 0;
        }
    }

    /// The selected row's callers (with -g): the functions that called it, with their shares.
    fn callers(&self, shown: Option<&rperf_report::Profile>, row: Option<&Row>) -> Vec<String> {
        let Some(func) = row.and_then(|r| r.func) else { return Vec::new() };
        let Some(p) = shown else { return Vec::new() };
        let mut by: std::collections::HashMap<String, u64> = Default::default();
        let mut total = 0;
        if let Some(s) = p.main_section() {
            for c in &s.stacks {
                let funcs = &p.stack_funcs[c.stack as usize];
                if funcs.first() == Some(&func) {
                    total = u64::saturating_add(total, c.weight);
                    let caller = funcs.get(1).map_or("[root]".to_string(), |&f| p.names.func_name(f));
                    let w = by.entry(caller).or_default();
                    *w = w.saturating_add(c.weight);
                }
            }
        }
        let mut v: Vec<(String, u64)> = by.into_iter().collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        v.into_iter()
            .take(5)
            .map(|(n, w)| format!("  {:>6.2}%  {n}", 100.0 * w as f64 / total.max(1) as f64))
            .collect()
    }
}

fn draw(
    out: &mut impl Write,
    header: &str,
    rows: &[Row],
    view: &View,
    shown: Option<&rperf_report::Profile>,
) -> std::io::Result<()> {
    // Every line fits the terminal's width: a long C++ name is cut, never wrapped.
    let width = rperf_record::tty::width().unwrap_or(80);
    let fit = |line: &str| fit(line, width);
    let mut s = String::from("\x1b[H\x1b[2J");
    let state = if view.paused { "  [paused]" } else { "" };
    let mut head = header.lines();
    s.push_str(&format!("{}\r\n", fit(&format!("{}{state}  {}", head.next().unwrap_or(""), view.note))));
    if let Some(h) = head.next() {
        s.push_str(&format!("{}\r\n", fit(h)));
    }
    for (i, r) in rows.iter().enumerate() {
        if i == view.selected {
            s.push_str(&format!("\x1b[7m{}\x1b[0m\r\n", fit(&r.text)));
        } else {
            s.push_str(&format!("{}\r\n", fit(&r.text)));
        }
    }
    if view.call_graph {
        s.push_str("\r\nCallers of the selected row:\r\n");
        for l in view.callers(shown, rows.get(view.selected)) {
            s.push_str(&format!("{}\r\n", fit(&l)));
        }
    }
    s.push_str(&fit("q quit  p pause  j/k select  d zoom binary  t zoom thread  z zoom out"));
    s.push_str("\r\n");
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// `line` cut to `width` characters, its end marked `…` when cut.
fn fit(line: &str, width: usize) -> String {
    match line.char_indices().nth(width.saturating_sub(1)) {
        Some((at, _)) if line[at..].chars().nth(1).is_some() => format!("{}…", &line[..at]),
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_cut_to_the_width() {
        assert_eq!(super::fit("abcdef", 4), "abc…");
        assert_eq!(super::fit("abcd", 4), "abcd");
        assert_eq!(super::fit("ab", 4), "ab");
    }

    #[test]
    fn g_alone_means_dwarf_for_top_as_for_record() {
        let expand =
            |args: &[&str]| crate::record::expand_short_g(args.iter().map(|a| a.to_string()).collect());
        for cmd in ["top", "record"] {
            assert_eq!(expand(&["rperf", cmd, "-g", "-p", "1"])[2], "--call-graph=dwarf");
            assert_eq!(expand(&["rperf", cmd, "-g", "fp", "-p", "1"])[2], "--call-graph=fp");
        }
        assert_eq!(expand(&["rperf", "report", "-g"])[2], "-g");
    }
}
