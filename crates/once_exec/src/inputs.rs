//! Source inputs checked again when an action has run: a file edited while the action
//! ran (or since it was keyed) makes a result its key does not describe, so that result
//! is not recorded.
//!
//! An action's key holds the digests and permission bits of the source files it reads,
//! as analysis read them when it planned ([`SourceStamps`]: the stamp each was read
//! with, which a front end hands the executor). When the action has run, every source
//! input is stamped again (following symbolic links, as reading does); one whose stamp
//! differs from the one its digest was read with (size, modification and change times,
//! inode, mode, kind) — or that appeared or went — changed after it was keyed, and the
//! program may have read either version, or a mix. The run's outputs stay in place for
//! this build (and are what its dependents see, keyed by their own digests), but the
//! result is not recorded under a key it does not belong to, and a warning names the
//! files: the next build runs the action again. Any change of the stamp counts, even one
//! that leaves the content as it was (a `touch`, an edit undone): the program may have
//! read the content in between. An input the front end has no stamp for is stamped just
//! before the action runs.
//!
//! Source inputs are the action's inputs outside `.once` that no action of the plan
//! produces (those are keyed by the digests of the outputs themselves).

use std::collections::HashMap;
use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;

use once_host::FileStamp;
use once_model::paths::is_under;
use rustix::fs::{AtFlags, statat};
use rustix::io::Errno;

/// The stamp each source file of a plan was read with when its digest entered a static
/// key, by workspace path: `None` for a file that was missing. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct SourceStamps(Arc<HashMap<String, Option<FileStamp>>>);

impl SourceStamps {
    pub fn new(stamps: HashMap<String, Option<FileStamp>>) -> SourceStamps {
        SourceStamps(Arc::new(stamps))
    }

    /// The stamp `path` was keyed with, if the front end knows it.
    pub fn get(&self, path: &str) -> Option<Option<FileStamp>> {
        self.0.get(path).copied()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Every path with its stamp, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<FileStamp>)> {
        self.0.iter().map(|(path, stamp)| (path.as_str(), *stamp))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A source input and the stamp its key describes (`Err`: it could not be stamped, so it
/// counts as changed).
pub(crate) type Baseline = Vec<(String, Result<Option<FileStamp>, ()>)>;

/// The source inputs of an action with inputs `inputs`, whose inputs equal to or under
/// `produced` (its producers' outputs) are keyed by those outputs' digests, each with the
/// stamp its key describes: the one in `stamps`, else the one it has now.
pub(crate) fn baseline(
    root: impl AsFd,
    inputs: &[String],
    produced: &[&str],
    stamps: &SourceStamps,
) -> Baseline {
    let mut baseline: Baseline = inputs
        .iter()
        .filter(|input| {
            !is_under(input, ".once")
                && !produced
                    .iter()
                    .any(|output| !output.is_empty() && is_under(input, output))
        })
        .map(|input| {
            let stamp = match stamps.get(input) {
                Some(stamp) => Ok(stamp),
                None => stamp_now(&root, input).map_err(|_| ()),
            };
            (input.clone(), stamp)
        })
        .collect();
    baseline.sort_by(|a, b| a.0.cmp(&b.0));
    baseline.dedup_by(|a, b| a.0 == b.0);
    baseline
}

/// The inputs of `baseline` whose stamp now differs from the one their key describes.
pub(crate) fn changed(root: impl AsFd, baseline: &Baseline) -> Vec<String> {
    baseline
        .iter()
        .filter(|(path, then)| match (then, stamp_now(&root, path)) {
            (Ok(then), Ok(now)) => *then != now,
            _ => true,
        })
        .map(|(path, _)| path.clone())
        .collect()
}

/// The warning of a result not recorded because `changed` inputs changed.
pub(crate) fn changed_warning(changed: &[String]) -> String {
    let named: Vec<String> = changed.iter().map(|path| format!("`{path}`")).collect();
    format!(
        "{} changed while the action ran (or after it was keyed): its result is not cached, \
         and the next build runs it again",
        named.join(", ")
    )
}

/// The stamp of the workspace file `relative` (below the root `root`) now, following
/// symbolic links as reading does; `None` when nothing is there.
pub(crate) fn stamp_now(root: impl AsFd, relative: &str) -> io::Result<Option<FileStamp>> {
    match statat(root, relative, AtFlags::empty()) {
        Ok(stat) => Ok(Some(FileStamp::of_stat(&stat))),
        Err(Errno::NOENT) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up real files"
)]
mod tests {
    use super::*;

    #[test]
    fn stamps_agree_with_the_analysis_and_see_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = once_host::confined::open_root(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("p")).unwrap();
        std::fs::write(dir.path().join("p/in.txt"), "v1\n").unwrap();
        std::os::unix::fs::symlink("in.txt", dir.path().join("p/link.txt")).unwrap();
        for path in ["p/in.txt", "p/link.txt", "p"] {
            // What the analysis stamps a source with (`once_db::OsSystem::stamp`).
            let analysis = std::fs::metadata(dir.path().join(path))
                .ok()
                .map(|metadata| FileStamp::of_metadata(&metadata));
            assert_eq!(stamp_now(&root, path).unwrap(), analysis, "{path}");
        }
        assert_eq!(stamp_now(&root, "p/none.txt").unwrap(), None);

        let inputs: Vec<String> = [
            "p/in.txt",
            "p/link.txt",
            "p/gone.txt",
            ".once/out/x",
            "gen/o",
        ]
        .map(String::from)
        .to_vec();
        // The analysis knew `p/gone.txt` missing; the rest is stamped now.
        let stamps = SourceStamps::new(HashMap::from([("p/gone.txt".to_owned(), None)]));
        let baseline = baseline(&root, &inputs, &["gen"], &stamps);
        let paths: Vec<&str> = baseline.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["p/gone.txt", "p/in.txt", "p/link.txt"]);
        assert!(changed(&root, &baseline).is_empty());
        // An edit (through the link too), then one undone: changed all the same.
        std::fs::write(dir.path().join("p/in.txt"), "v2\n").unwrap();
        std::fs::write(dir.path().join("p/in.txt"), "v1\n").unwrap();
        assert_eq!(changed(&root, &baseline), ["p/in.txt", "p/link.txt"]);
        // A file that appeared where the key had none.
        std::fs::write(dir.path().join("p/gone.txt"), "").unwrap();
        let baseline = super::baseline(&root, &inputs, &["gen"], &stamps);
        assert_eq!(changed(&root, &baseline), ["p/gone.txt"]);
        assert_eq!(
            changed_warning(&["p/a".into(), "p/b".into()]),
            "`p/a`, `p/b` changed while the action ran (or after it was keyed): its result is \
             not cached, and the next build runs it again"
        );
    }
}
