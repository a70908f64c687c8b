//! `once runtime start|status|list|logs|stop|prune`: runtime sessions (`once_runtime`,
//! docs/runtime.md). `start` plans and builds like `once run`, then hands the program to
//! a detached supervisor and prints the session record at once.
//! Exit codes: 0 done, 1 the build failed or a stop did not finish in time, 2 usage or
//! I/O errors (an unknown session included).

use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use once_runtime::{LogSource, SessionRecord};
use serde_json::json;

use crate::Outcome;
use crate::args::{Args, ExecArgs, Format, Runtime};
use crate::build::{
    Interruptible, open_session, outcome_of, plan_cold, print_records, print_warnings, refuse,
    set_interruptible,
};
use crate::human::printable;
use crate::query::{print_json, workspace_root};
use once_build::plan_cache::PlanRequest;

pub fn run(args: &Args, runtime: &Runtime) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let json = args.format == Format::Json;
    match runtime {
        Runtime::Start {
            target,
            args: extra,
            exec,
        } => start(args, &root, target, extra, exec),
        Runtime::Status { session_id } => {
            let record = once_runtime::read_session(&root, session_id)?;
            if json {
                print_json(&once_json::session_record(&record))?;
            } else {
                print_record(&record);
            }
            Ok(Outcome::Success)
        }
        Runtime::List => {
            let records =
                once_runtime::list_sessions(&root).context("cannot read the runtime sessions")?;
            if json {
                print_json(
                    &json!({ "sessions": records.iter().map(once_json::session_record).collect::<Vec<_>>() }),
                )?;
            } else if records.is_empty() {
                println!("no runtime sessions");
            } else {
                for record in &records {
                    println!(
                        "{}  {}  {}",
                        printable(&record.session_id),
                        record.status.as_str(),
                        printable(&record.target)
                    );
                }
            }
            Ok(Outcome::Success)
        }
        Runtime::Logs {
            session_id,
            source,
            cursor,
            limit,
            follow,
        } => logs(
            args,
            &root,
            session_id,
            source.as_deref().and_then(LogSource::parse),
            cursor.clone(),
            limit.unwrap_or(once_runtime::logs::DEFAULT_LIMIT),
            *follow,
        ),
        Runtime::Stop {
            session_id,
            all,
            timeout,
        } => {
            if !timeout.is_finite() || *timeout < 0.0 {
                bail!("--timeout takes a number of seconds, not `{timeout}`");
            }
            let grace = Duration::from_secs_f64(timeout.min(86_400.0));
            let ids: Vec<String> = if *all {
                once_runtime::list_sessions(&root)?
                    .into_iter()
                    .filter(|r| !r.status.is_final())
                    .map(|r| r.session_id)
                    .collect()
            } else {
                session_id.iter().cloned().collect()
            };
            // Each stop waits for its own end; asking them all first lets the grace
            // periods run at the same time.
            let stops: Vec<std::thread::JoinHandle<std::io::Result<SessionRecord>>> = ids
                .iter()
                .map(|id| {
                    let (root, id) = (root.clone(), id.clone());
                    std::thread::spawn(move || once_runtime::stop_session(&root, &id, grace))
                })
                .collect();
            let mut records = Vec::new();
            for stop in stops {
                records.push(
                    stop.join()
                        .map_err(|_| anyhow!("a stop request panicked"))??,
                );
            }
            if json {
                if *all {
                    print_json(
                        &json!({ "sessions": records.iter().map(once_json::session_record).collect::<Vec<_>>() }),
                    )?;
                } else if let Some(record) = records.first() {
                    print_json(&once_json::session_record(record))?;
                }
            } else if *all && records.is_empty() {
                println!("no running sessions");
            } else {
                for record in &records {
                    print_record(record);
                }
            }
            Ok(if records.iter().all(|r| r.status.is_final()) {
                Outcome::Success
            } else {
                Outcome::Invalid
            })
        }
        Runtime::Prune { older_than } => {
            let limit = parse_duration(older_than)?;
            let removed = once_runtime::prune_sessions(&root, limit)
                .context("cannot prune the runtime sessions")?;
            if json {
                print_json(&json!({ "removed": removed }))?;
            } else {
                println!(
                    "removed {} finished session{}",
                    removed.len(),
                    if removed.len() == 1 { "" } else { "s" }
                );
                for id in &removed {
                    println!("  {}", printable(id));
                }
            }
            Ok(Outcome::Success)
        }
    }
}

/// `30s`, `10m`, `2h`, `7d` or a number of seconds.
fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => 0,
    };
    let value: u64 = number.parse().ok().filter(|_| seconds > 0).ok_or_else(|| {
        anyhow!("`{text}` is not a duration (examples: `30s`, `10m`, `2h`, `7d`, `0`)")
    })?;
    Ok(Duration::from_secs(value.saturating_mul(seconds)))
}

fn print_record(record: &SessionRecord) {
    println!("{}: {}", printable(&record.target), record.status.as_str());
    println!("  session:    {}", printable(&record.session_id));
    if let Some(pid) = record.pid {
        println!("  pid:        {pid} (its process group)");
    }
    if let Some(pid) = record.supervisor_pid {
        println!("  supervisor: {pid}");
    }
    if let Some(code) = record.exit_code {
        println!("  exit code:  {code}");
    }
    if let Some(signal) = record.signal {
        println!("  signal:     {signal}");
    }
    if let Some(by) = record.stopped_by {
        println!("  stopped by: {}", by.as_str());
    }
    if let Some(reason) = &record.reason {
        println!("  reason:     {}", printable(reason));
    }
    println!("  log:        {}", printable(&record.log));
}

fn start(
    args: &Args,
    root: &std::path::Path,
    target: &str,
    extra: &[String],
    exec: &ExecArgs,
) -> anyhow::Result<Outcome> {
    let session = open_session(root, exec)?;
    session.connect_remote_early();
    let patterns = [target.to_owned()];
    let request = PlanRequest::Capability {
        patterns: &patterns,
        capability: "run",
    };
    let plan = plan_cold(root, session.store(), &request, false)?.plan;
    if !plan.problems.is_empty() {
        return refuse(&plan, args.format);
    }
    let id = plan
        .targets
        .first()
        .map_or_else(|| target.to_owned(), |t| t.id.clone());
    let supervisor =
        std::env::current_exe().context("cannot find the `once` executable to supervise")?;
    set_interruptible(Interruptible::Execution(session.cancel_handle()));
    let started = session.start_runtime(&id, &plan, extra, &supervisor, None);
    set_interruptible(Interruptible::Nothing);
    let started = started.map_err(|e| anyhow!(e))?;
    print_warnings(&started.warnings);
    let record = match &started.session {
        Ok(record) => record,
        Err(_) => {
            if args.format == Format::Json {
                print_json(
                    &json!({ "success": false, "capability": "run", "targets": started.records, "problems": [], "diagnostics": [] }),
                )?;
            } else {
                print_records(&started.records);
                println!(
                    "not started: what `{}` needs failed to build",
                    printable(&id)
                );
            }
            return Ok(outcome_of(started.exit_code()));
        }
    };
    if args.format == Format::Json {
        print_json(&once_json::session_record(record))?;
    } else {
        print_record(record);
        println!(
            "  follow:     once runtime logs {} --follow",
            printable(&record.session_id)
        );
        println!(
            "  stop:       once runtime stop {}",
            printable(&record.session_id)
        );
    }
    Ok(outcome_of(started.exit_code()))
}

fn logs(
    args: &Args,
    root: &std::path::Path,
    id: &str,
    source: Option<LogSource>,
    mut cursor: Option<String>,
    limit: usize,
    follow: bool,
) -> anyhow::Result<Outcome> {
    let dir = once_runtime::session::session_dir(root, id)?;
    let json = args.format == Format::Json;
    loop {
        // Read the status first: records written before the session ended are all in
        // the log when it says it ended.
        let finished = once_runtime::session::observe(&dir)?.status.is_final();
        let page = once_runtime::read_logs(&dir, id, source, cursor.as_deref(), limit)
            .map_err(|e| anyhow!("{e}"))?;
        if json && !follow {
            print_json(&page)?;
            return Ok(Outcome::Success);
        }
        if page.rotated_away > 0 && !json {
            eprintln!(
                "once: {} record{} after the cursor were removed by log rotation before they were read",
                page.rotated_away,
                if page.rotated_away == 1 { "" } else { "s" }
            );
        }
        for record in &page.records {
            if json {
                print_json(record)?;
            } else if record.source == LogSource::Stderr {
                eprintln!("{}", printable(&record.message));
            } else {
                println!("{}", printable(&record.message));
            }
        }
        if page.next_cursor.is_some() {
            cursor.clone_from(&page.next_cursor);
        }
        // A reader that left (`… --follow | grep -m1 ready`) ends the following too.
        if !follow || crate::output::closed() {
            return Ok(Outcome::Success);
        }
        if finished && page.next_cursor.is_none() {
            return Ok(Outcome::Success);
        }
        if page.next_cursor.is_none() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
