//! Starting the app once the recorder waits for it, so that its start is recorded: its main
//! activity (`--launch`), one activity (`-a`), or an instrumentation test (`-t`), as
//! app_profiler.py starts them.

use anyhow::Context;

use super::adb::Adb;

/// What a recorder prints while it waits for an app to start: rperf's, then simpleperf's.
const WAITING_FOR_APP: [&str; 2] = ["waiting for app", "waiting for process of app"];

/// Whether a recorder's message says it waits for the app.
pub fn waits_for_app(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    WAITING_FOR_APP.iter().any(|w| text.contains(w))
}

/// How the app is started once recording waits for it.
pub struct Start<'a> {
    pub app: &'a str,
    how: StartHow<'a>,
}

enum StartHow<'a> {
    MainActivity,
    Activity(&'a str),
    Test(&'a str),
}

impl<'a> Start<'a> {
    /// How `--launch`, `-a ACTIVITY` or `-t TEST` start `app` (None: it is not started).
    pub fn new(
        app: &'a str,
        launch: bool,
        activity: Option<&'a str>,
        test: Option<&'a str>,
    ) -> Option<Start<'a>> {
        let how = match (activity, test) {
            (Some(activity), _) => StartHow::Activity(activity),
            (_, Some(test)) => StartHow::Test(test),
            _ if launch => StartHow::MainActivity,
            _ => return None,
        };
        Some(Start { app, how })
    }

    /// Starts the app: its main activity, the activity named, or the instrumentation test.
    pub fn run(&self, adb: &Adb) -> anyhow::Result<()> {
        let app = self.app;
        match self.how {
            StartHow::MainActivity => adb.shell_ok(&["am", "start", "-n", &main_activity(adb, app)?])?,
            StartHow::Activity(name) => adb.shell_ok(&["am", "start", "-n", &format!("{app}/{name}")])?,
            // As app_profiler.py runs a test: androidx's runner, in the app's package.
            StartHow::Test(class) => adb.shell_ok(&[
                "am",
                "instrument",
                "-e",
                "class",
                class,
                &format!("{app}/androidx.test.runner.AndroidJUnitRunner"),
            ])?,
        };
        Ok(())
    }
}

/// The app's launcher activity (`PKG/.MainActivity`), as the package manager resolves it.
fn main_activity(adb: &Adb, pkg: &str) -> anyhow::Result<String> {
    let out = adb.shell_ok(&[
        "cmd",
        "package",
        "resolve-activity",
        "--brief",
        "-c",
        "android.intent.category.LAUNCHER",
        pkg,
    ])?;
    out.lines()
        .last()
        .filter(|l| l.contains('/'))
        .map(|l| l.trim().to_string())
        .with_context(|| format!("app {pkg} has no launcher activity to start; start it yourself"))
}
