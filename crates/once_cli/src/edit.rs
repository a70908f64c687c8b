//! `once edit …`: plan an edit with the analysis, write it through the host, print the
//! outcome. Exit codes: 0 applied or materialized, 1 rejected or conflicting (nothing
//! written), 2 usage or I/O errors.

use std::sync::Arc;

use anyhow::anyhow;
use once_analysis::{AnalysisHost, EditOutcome, OsSystem};

use crate::Outcome;
use crate::args::{Args, Edit, Format};
use crate::human;
use crate::query::{print_json, workspace_root};

pub fn run(args: &Args, edit: &Edit) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let mut host = AnalysisHost::load(Arc::new(OsSystem), root);
    let json = args.format == Format::Json;
    match edit {
        Edit::Apply { file } => {
            let value = crate::query::read_json_input(file.as_deref(), "the edit")?;
            let request = once_json::edit_request(&value).map_err(|e| anyhow!(e))?;
            let outcome = host.apply_edit(&request).map_err(|e| anyhow!(e))?;
            if json {
                print_json(&once_json::edit_result(&outcome))?;
            } else {
                human::edit_result(&outcome);
            }
            Ok(match outcome {
                EditOutcome::Applied { .. } => Outcome::Success,
                EditOutcome::Rejected { .. } => Outcome::Invalid,
            })
        }
        Edit::MaterializeExample {
            kind,
            slug,
            destination,
        } => {
            let done = host
                .materialize_example(kind, slug, destination.as_deref().unwrap_or(""))
                .map_err(|e| anyhow!(e))?;
            if json {
                print_json(&once_json::materialize(
                    &done.plan,
                    &done.targets,
                    done.validation.as_ref(),
                ))?;
            } else {
                human::materialized(&done);
            }
            Ok(if done.plan.conflicts.is_empty() {
                Outcome::Success
            } else {
                Outcome::Invalid
            })
        }
    }
}
