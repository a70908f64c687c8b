//! Finding the workspace root and turning the directory walk into packages.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::system::{System, Walked};

/// The file name that makes a directory a package.
pub const MANIFEST_NAME: &str = "once.toml";

/// The workspace root for a command started in `start`: the nearest ancestor (or `start`
/// itself) whose `once.toml` has a `[workspace]` table, otherwise `start`.
pub fn find_workspace_root(system: &dyn System, start: &Path) -> PathBuf {
    for dir in start.ancestors() {
        let manifest = dir.join(MANIFEST_NAME);
        if !system.is_file(&manifest) {
            continue;
        }
        let Ok(text) = system.read_to_string(&manifest) else {
            continue;
        };
        let parse = once_syntax::parse(&text);
        let document = once_syntax::value::document(&parse);
        if document.root.get("workspace").is_some() {
            return dir.to_path_buf();
        }
    }
    start.to_path_buf()
}

/// One package found by the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveredPackage {
    /// Workspace-relative directory, `""` for the root.
    pub path: String,
    /// Package-relative files the package owns, sorted.
    pub files: Vec<String>,
    /// The symbolic links among `files`, sorted.
    pub links: Vec<String>,
}

/// Walks `root` and groups the files into packages: every directory holding a
/// `once.toml` is a package and owns the files below it that no nested package owns.
pub fn discover_packages(system: &dyn System, root: &Path) -> io::Result<Vec<DiscoveredPackage>> {
    let walked = system.walk_entries(root)?;
    Ok(group_into_packages(&walked))
}

/// Groups the sorted workspace-relative files of a walk into packages. A symbolic link
/// named `once.toml` makes no package (it is a file of the package around it).
pub fn group_into_packages(walked: &Walked) -> Vec<DiscoveredPackage> {
    let is_link = |file: &String| walked.links.binary_search(file).is_ok();
    let mut packages: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for file in &walked.files {
        if let Some(dir) = manifest_dir(file)
            && !is_link(file)
        {
            packages.entry(dir.to_owned()).or_default();
        }
    }
    for file in &walked.files {
        if let Some((package, relative)) = owning_package(&packages, file) {
            let relative = relative.to_owned();
            if let Some((owned, links)) = packages.get_mut(&package) {
                if is_link(file) {
                    links.push(relative.clone());
                }
                owned.push(relative);
            }
        }
    }
    packages
        .into_iter()
        .map(|(path, (mut files, mut links))| {
            files.sort_unstable();
            links.sort_unstable();
            DiscoveredPackage { path, files, links }
        })
        .collect()
}

/// The package directory of a manifest path, or `None` if `file` is no manifest.
pub fn manifest_dir(file: &str) -> Option<&str> {
    if file == MANIFEST_NAME {
        return Some("");
    }
    file.strip_suffix(MANIFEST_NAME)?.strip_suffix('/')
}

/// The directories that contain a workspace-relative path, deepest first, ending with
/// `""` (the root); `"a/b/c"` gives `"a/b"`, `"a"`, `""`. A path never contains itself.
pub fn enclosing_dirs(path: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(path);
    std::iter::from_fn(move || {
        let current = rest?;
        let parent = match current.rfind('/') {
            Some(slash) => &current[..slash],
            None => "",
        };
        rest = (!parent.is_empty()).then_some(parent);
        // `""` itself has no parent to give.
        (!current.is_empty()).then_some(parent)
    })
}

/// The deepest package containing `file`, with the file's package-relative path.
fn owning_package<'a, V>(
    packages: &BTreeMap<String, V>,
    file: &'a str,
) -> Option<(String, &'a str)> {
    let dir = enclosing_dirs(file).find(|dir| packages.contains_key(*dir))?;
    let relative = if dir.is_empty() {
        file
    } else {
        &file[dir.len() + 1..]
    };
    Some((dir.to_owned(), relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_belong_to_the_deepest_package() {
        let files: Vec<String> = [
            "README.md",
            "apps/cli/once.toml",
            "apps/cli/src/main.rs",
            "apps/notes.txt",
            "libs/core/once.toml",
            "libs/core/nested/once.toml",
            "libs/core/nested/x.rs",
            "libs/core/y.rs",
            "once.toml",
        ]
        .map(String::from)
        .to_vec();
        let rendered: Vec<String> = group_into_packages(&Walked::of_files(files))
            .iter()
            .map(|p| format!("{:?}: {}", p.path, p.files.join(", ")))
            .collect();
        expect_test::expect![[r#"
            [
                "\"\": README.md, apps/notes.txt, once.toml",
                "\"apps/cli\": once.toml, src/main.rs",
                "\"libs/core\": once.toml, y.rs",
                "\"libs/core/nested\": once.toml, x.rs",
            ]
        "#]]
        .assert_debug_eq(&rendered);
    }

    #[test]
    fn enclosing_dirs_go_up_to_the_root() {
        let dirs = |path| enclosing_dirs(path).collect::<Vec<_>>();
        assert_eq!(dirs("a/b/c.rs"), ["a/b", "a", ""]);
        assert_eq!(dirs("once.toml"), [""]);
        assert_eq!(dirs(""), Vec::<&str>::new());
    }

    #[test]
    fn no_root_manifest_means_loose_files_belong_to_nobody() {
        let files: Vec<String> = ["a.txt", "p/once.toml"].map(String::from).to_vec();
        let packages = group_into_packages(&Walked::of_files(files));
        assert_eq!(
            packages,
            vec![DiscoveredPackage {
                path: "p".into(),
                files: vec!["once.toml".into()],
                links: Vec::new(),
            }]
        );
    }

    #[test]
    fn links_are_files_of_their_package_but_never_manifests() {
        let walked = Walked {
            files: ["once.toml", "p/link.txt", "p/once.toml", "q/once.toml"]
                .map(String::from)
                .to_vec(),
            links: ["p/link.txt", "q/once.toml"].map(String::from).to_vec(),
        };
        let packages = group_into_packages(&walked);
        assert_eq!(
            packages,
            vec![
                DiscoveredPackage {
                    path: String::new(),
                    files: vec!["once.toml".into(), "q/once.toml".into()],
                    links: vec!["q/once.toml".into()],
                },
                DiscoveredPackage {
                    path: "p".into(),
                    files: vec!["link.txt".into(), "once.toml".into()],
                    links: vec!["link.txt".into()],
                },
            ]
        );
    }
}
