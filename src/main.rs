//! The `rperf` command: parses the subcommand and hands over to its module.

mod android;
mod annotate;
mod binary_cache;
mod debuginfod_args;
mod dump;
mod exit;
mod inject;
mod list;
mod log;
mod output_file;
mod record;
mod report;
mod run_as;
mod stat;
mod target_args;
mod top;

use clap::{Parser, Subcommand};

/// rperf: a sampling CPU profiler for Linux, built on perf_events.
#[derive(Parser)]
#[command(name = "rperf", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    Record(record::RecordArgs),
    Report(report::ReportArgs),
    Dump(dump::DumpArgs),
    Stat(stat::StatArgs),
    List(list::ListArgs),
    Android(android::AndroidArgs),
    Annotate(annotate::AnnotateArgs),
    Top(top::TopArgs),
    Inject(inject::InjectArgs),
}

fn main() {
    let args = android::expand_one_dash_options(record::expand_short_g(std::env::args().collect()));
    if args.len() == 1 {
        // `rperf` alone: the help, and success, as simpleperf answers (its app API runs the
        // profiler so, to check that the app may execute it).
        use clap::CommandFactory;
        Cli::command().print_help().ok();
        println!();
        return;
    }
    let cli = Cli::parse_from(args.clone());
    let result = match cli.command {
        Command::Record(a) => record::run(a, &args),
        Command::Report(a) => report::run(a),
        Command::Dump(a) => dump::run(a),
        Command::Stat(a) => stat::run(a),
        Command::List(a) => list::run(a),
        Command::Android(a) => android::run(a),
        Command::Annotate(a) => annotate::run(a),
        Command::Top(a) => top::run(a),
        Command::Inject(a) => inject::run(a),
    };
    std::process::exit(exit::code(result));
}
