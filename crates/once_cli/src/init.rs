//! `once init`: gather the repository's ecosystem facts (`once_build::init`), plan the
//! manifests with the analysis, and write them through the host (or, with `--dry-run`
//! and `--check`, only show the change). Exit codes: 0 written or in step, 1 a batch was
//! rejected or (`--check`) the manifests are out of step, 2 usage or I/O errors.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use once_analysis::{AnalysisHost, OsSystem};

use crate::Outcome;
use crate::args::{Args, Format};
use crate::human;
use crate::query::{print_json, workspace_root};

pub fn run(args: &Args, dir: Option<&Path>, dry_run: bool, check: bool) -> anyhow::Result<Outcome> {
    let root = match dir {
        Some(dir) => {
            let root = dir
                .canonicalize()
                .with_context(|| format!("directory `{}` cannot be opened", dir.display()))?;
            if !root.is_dir() {
                anyhow::bail!("`{}` is not a directory", dir.display());
            }
            root
        }
        None => workspace_root(args)?,
    };
    let system = Arc::new(OsSystem);
    let facts = once_build::init::gather(&*system, &root);
    let mut host = AnalysisHost::load(system, root);
    let write = !dry_run && !check;
    let plan = if write {
        host.apply_init(&facts).map_err(|e| anyhow!(e))?
    } else {
        host.analysis()
            .plan_init(&facts)
            .map_err(|_| anyhow!("`once init` was cancelled"))?
            .map_err(|e| anyhow!(e))?
    };
    let validation = if write {
        Some(
            host.analysis()
                .validate_workspace()
                .map_err(|_| anyhow!("the validation was cancelled"))?,
        )
    } else {
        None
    };
    if args.format == Format::Json {
        print_json(&once_json::InitDto {
            plan: once_json::init_plan(&plan),
            written: write,
            workspace_validation: validation.as_ref().map(once_json::validation),
        })?;
    } else {
        human::init(&plan, !write, validation.as_ref());
        if check && plan.in_step() {
            println!("the manifests are in step with the ecosystem files");
        } else if check {
            println!("the manifests are out of step with the ecosystem files: run `once init`");
        }
    }
    let rejected = plan.manifests.iter().any(|m| m.rejected());
    Ok(if rejected || (check && !plan.in_step()) {
        Outcome::Invalid
    } else {
        Outcome::Success
    })
}
