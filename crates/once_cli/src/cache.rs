//! `once cache stats|clean|gc`: the local store of build results (`once_exec::Store`).
//! Exit codes: 0 done, 2 usage or I/O errors.

use anyhow::{Context as _, anyhow};
use once_exec::{Store, StoreStats};
use serde_json::json;

use crate::Outcome;
use crate::args::{Args, Cache, Format, StoreArg};
use crate::query::{print_json, workspace_root};

fn open(args: &Args, store: &StoreArg) -> anyhow::Result<Store> {
    let path = match &store.store {
        Some(path) => path.clone(),
        None => Store::default_path(&workspace_root(args)?),
    };
    Store::open(&path).with_context(|| format!("cannot open the store `{}`", path.display()))
}

fn stats_json(store: &Store, stats: &StoreStats) -> serde_json::Value {
    json!({
        "store": store.path().to_string_lossy(),
        "blobs": { "count": stats.blobs, "bytes": stats.blob_bytes },
        "actions": { "count": stats.actions, "bytes": stats.action_bytes },
    })
}

/// The hit, transfer and failure counters of the commands that used the store.
fn usage_json(store: &Store) -> serde_json::Value {
    let usage = once_remote::stats::read(store);
    serde_json::Value::Object(
        usage
            .fields()
            .iter()
            .map(|(name, value)| ((*name).to_owned(), json!(value)))
            .collect(),
    )
}

fn print_usage(store: &Store) {
    let usage = once_remote::stats::read(store);
    println!(
        "hits:    {} local, {} remote; {} actions run ({} commands since the store was cleaned)",
        usage.local_hits, usage.remote_hits, usage.misses, usage.commands
    );
    println!(
        "remote:  {} lookups, {} bytes down, {} bytes up ({} results uploaded, {} above max_upload_size not uploaded)",
        usage.remote_lookups, usage.bytes_down, usage.bytes_up, usage.uploads, usage.too_large
    );
    println!(
        "remote failures: {} uploads, {} lookups or downloads, {} corrupt blobs, {} skipped",
        usage.upload_failures, usage.read_failures, usage.corrupt, usage.skipped
    );
}

fn print_stats(store: &Store, stats: &StoreStats, verb: &str) {
    println!("{verb} {}", store.path().display());
    println!("blobs:   {} ({} bytes)", stats.blobs, stats.blob_bytes);
    println!("actions: {} ({} bytes)", stats.actions, stats.action_bytes);
}

pub fn run(args: &Args, cache: &Cache) -> anyhow::Result<Outcome> {
    let json = args.format == Format::Json;
    match cache {
        Cache::Stats { store } => {
            let store = open(args, store)?;
            let stats = store.stats().context("cannot read the store")?;
            if json {
                let mut answer = stats_json(&store, &stats);
                answer["usage"] = usage_json(&store);
                print_json(&answer)?;
            } else {
                print_stats(&store, &stats, "store");
                print_usage(&store);
            }
        }
        Cache::Clean { store } => {
            let store = open(args, store)?;
            let removed = store.clean().context("cannot clean the store")?;
            if json {
                print_json(&json!({ "removed": stats_json(&store, &removed) }))?;
            } else {
                print_stats(&store, &removed, "removed from");
            }
        }
        Cache::Gc { max_size, store } => {
            let max_bytes = once_exec::store::parse_size(max_size).ok_or_else(|| {
                anyhow!("`{max_size}` is not a size (bytes, or a number with K, M, G or T)")
            })?;
            let store = open(args, store)?;
            let report = store.gc(max_bytes).context("cannot collect the store")?;
            let reclaimed = report.bytes_before.saturating_sub(report.bytes_after);
            if json {
                print_json(&json!({
                    "store": store.path().to_string_lossy(),
                    "max_size": max_bytes,
                    "bytes_before": report.bytes_before,
                    "bytes_after": report.bytes_after,
                    "bytes_reclaimed": reclaimed,
                    "removed_blobs": report.removed_blobs,
                    "removed_actions": report.removed_actions,
                }))?;
            } else {
                println!(
                    "{}: {} bytes → {} bytes ({} blobs and {} action records removed)",
                    store.path().display(),
                    report.bytes_before,
                    report.bytes_after,
                    report.removed_blobs,
                    report.removed_actions
                );
            }
        }
    }
    Ok(Outcome::Success)
}
