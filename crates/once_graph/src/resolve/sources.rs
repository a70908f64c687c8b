//! The checks of what a target's sources and `path` attributes name: a file of the package
//! (or a directory holding one) for each `path` value (`missing_file`), and no symbolic
//! link once does not follow among the files `srcs` match or attributes name
//! (`invalid_source_link`; `once_db::links`). Resolution reads the state of the package's
//! links only, never of its other files.

use once_db::{Db, Package};
use once_model::{AttrSpec, AttrType, DiagnosticCode, TextRange};

use super::{TargetChecker, string_elements};
use crate::manifests::AttrLiteral;

/// What the source checks know of a package: its files (symbolic links included), and
/// why once does not follow each link among them that it does not follow (by
/// package-relative path; see `once_db::links`).
#[derive(Clone, Copy, Debug)]
pub struct PackageFiles<'a> {
    pub files: &'a [String],
    pub refused_links: &'a [(String, String)],
}

impl PackageFiles<'_> {
    /// Why the package's file `file` (a link) is not followed, when it is not.
    pub(super) fn refusal(&self, file: &str) -> Option<&str> {
        self.refused_links
            .binary_search_by(|(link, _)| link.as_str().cmp(file))
            .ok()
            .map(|index| self.refused_links[index].1.as_str())
    }

    /// Whether the package-relative `path` names a file of the package, or a directory
    /// holding one (`""` is the package itself).
    pub(super) fn holds(&self, path: &str) -> bool {
        if path.is_empty()
            || self
                .files
                .binary_search_by(|f| f.as_str().cmp(path))
                .is_ok()
        {
            return true;
        }
        let prefix = format!("{path}/");
        let at = self.files.partition_point(|f| f.as_str() < prefix.as_str());
        self.files.get(at).is_some_and(|f| f.starts_with(&prefix))
    }
}

/// The links among `package`'s files that once does not follow, each with why (sorted by
/// package-relative path): the only files whose state resolution reads.
#[salsa::tracked(returns(ref))]
pub(super) fn refused_links(db: &dyn Db, package: Package) -> Vec<(String, String)> {
    let path = package.path(db);
    package
        .links(db)
        .iter()
        .filter_map(|link| {
            let file = db.file_for_path(&Package::join(path, link));
            let why = once_db::link_target(db, file).refusal()?;
            Some((link.clone(), why))
        })
        .collect()
}

impl TargetChecker<'_> {
    /// The `invalid_source_link` error of the package file `link` (package-relative), a
    /// symbolic link once does not follow for `why`, named at `range` of `attribute`.
    pub(super) fn report_refused_link(
        &mut self,
        package: &str,
        link: &str,
        why: &str,
        range: TextRange,
        attribute: &str,
    ) {
        let path = Package::join(package, link);
        let message = format!(
            "the source `{path}` is a symbolic link {why}; once follows links to files of the \
             workspace only"
        );
        self.report(
            DiagnosticCode::InvalidSourceLink,
            message,
            range,
            Some(attribute),
        )
        .repairs
        .push(format!(
            "Point `{path}` at a file of the workspace, replace it by a copy of the file, or \
             leave it out"
        ));
    }

    /// Checks each file a `path` (or list of paths) attribute names: a file or directory
    /// of the package, and no link once does not follow.
    pub(super) fn check_attr_paths(
        &mut self,
        spec: &AttrSpec,
        attribute: &str,
        value: &AttrLiteral,
        branch: Option<&str>,
        files: PackageFiles<'_>,
    ) {
        let is_path = match &spec.ty {
            AttrType::Path => true,
            AttrType::List(inner) => **inner == AttrType::Path,
            _ => false,
        };
        if !is_path {
            return;
        }
        let package = self.manifest.package.clone();
        for (written, range) in string_elements(value) {
            let place = branch.map_or(String::new(), |b| format!(" (select branch `{b}`)"));
            let in_package = once_model::paths::lexical_join("", written);
            let Some(path) = in_package.filter(|_| !written.starts_with('/')) else {
                let message = format!(
                    "attribute `{}`{place} names `{written}`, which is not a path inside the \
                     package",
                    spec.name
                );
                self.report(DiagnosticCode::MissingFile, message, range, Some(attribute))
                    .repairs
                    .push("Name a file of the package, relative to its directory".into());
                continue;
            };
            if let Some(why) = files.refusal(&path) {
                let why = why.to_owned();
                self.report_refused_link(&package, &path, &why, range, attribute);
                continue;
            }
            if !files.holds(&path) {
                let place_of = if package.is_empty() {
                    "the root package".to_owned()
                } else {
                    format!("package `{package}`")
                };
                let message = format!(
                    "attribute `{}`{place} names `{written}`, but {place_of} has no such file",
                    spec.name
                );
                self.report(DiagnosticCode::MissingFile, message, range, Some(attribute))
                    .repairs
                    .push(format!(
                        "Create `{}`, fix the path, or remove it",
                        Package::join(&package, &path)
                    ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PackageFiles;

    #[test]
    fn a_path_names_a_file_or_a_directory_holding_one() {
        let files: Vec<String> = ["a-x", "a.txt", "a/b/c.txt", "ab", "link.txt"]
            .map(String::from)
            .to_vec();
        let refused = vec![("link.txt".to_owned(), "to nowhere".to_owned())];
        let package = PackageFiles {
            files: &files,
            refused_links: &refused,
        };
        for held in ["", "a", "a/b", "a/b/c.txt", "a-x", "ab", "a.txt"] {
            assert!(package.holds(held), "{held}");
        }
        // `a/` sorts after `a-x` and `a.txt`: the directory is found all the same, and
        // a prefix of a name is no directory.
        for missing in ["a/c", "a/b/c", "b", "a-", "a/b/c.txt/d"] {
            assert!(!package.holds(missing), "{missing}");
        }
        assert_eq!(package.refusal("link.txt"), Some("to nowhere"));
        assert_eq!(package.refusal("a.txt"), None);
    }
}
