//! From ecosystem facts to proposed targets: which kinds, names, sources (globs with `!`
//! exclusions, so new files are picked up), dependencies and attributes each package of
//! the repository gets. Pure: the files a pattern could match come from the facts' walk.

use std::collections::{BTreeMap, BTreeSet};

use once_model::AttrValue;

use super::facts::{EcosystemFacts, PythonRunner};

/// A target of another (or the same) package, before it is written as a reference.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TargetRef {
    pub package: String,
    pub name: String,
}

/// One target `once init` would write.
#[derive(Clone, Debug)]
pub(crate) struct Proposal {
    pub package: String,
    pub name: String,
    pub kind: &'static str,
    /// The ecosystem file it comes from, workspace-relative.
    pub source: String,
    pub srcs: Vec<String>,
    pub deps: Vec<TargetRef>,
    pub roles: Vec<(&'static str, Vec<TargetRef>)>,
    pub attrs: Vec<(String, AttrValue)>,
    /// The attributes the generator decides for this kind: set when proposed, removed
    /// when not. Others are the user's.
    pub owned_attrs: &'static [&'static str],
    /// The dependency roles the generator decides.
    pub owned_roles: &'static [&'static str],
}

impl Proposal {
    fn new(package: &str, name: String, kind: &'static str, source: String) -> Proposal {
        Proposal {
            package: package.to_owned(),
            name,
            kind,
            source,
            srcs: Vec::new(),
            deps: Vec::new(),
            roles: Vec::new(),
            attrs: Vec::new(),
            owned_attrs: &[],
            owned_roles: &[],
        }
    }

    pub fn id(&self) -> TargetRef {
        TargetRef {
            package: self.package.clone(),
            name: self.name.clone(),
        }
    }
}

/// `a-b_c` → `ABC`-style target names: each run of letters and digits capitalised,
/// everything else dropped (`text-utils` → `TextUtils`, `@acme/pkg-a` → `PkgA`).
pub(crate) fn pascal(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name);
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_alphanumeric()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    if out.is_empty() {
        "Package".to_owned()
    } else {
        out
    }
}

/// `dir/name`, or `name` at the root.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn last_segment(dir: &str) -> &str {
    dir.rsplit('/').next().unwrap_or(dir)
}

/// Which package owns each file: the deepest package directory above it.
pub(crate) struct Tree<'a> {
    files: &'a [String],
    packages: BTreeSet<String>,
}

impl<'a> Tree<'a> {
    pub fn new(files: &'a [String], packages: BTreeSet<String>) -> Tree<'a> {
        Tree { files, packages }
    }

    fn owner(&self, file: &str) -> &str {
        let mut dir = file;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if let Some(found) = self.packages.get(parent) {
                return found;
            }
            dir = parent;
        }
        ""
    }

    /// The files the package at `dir` owns, relative to it.
    pub fn owned(&self, dir: &str) -> Vec<&'a str> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        self.files
            .iter()
            .filter(|f| f.starts_with(&prefix) && self.owner(f) == dir)
            .map(|f| &f[prefix.len()..])
            .collect()
    }
}

fn matcher(pattern: &str) -> Option<globset::GlobMatcher> {
    once_db::package_filter::compile_glob(pattern)
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether `pattern` matches one of `files`.
fn matches_any(pattern: &str, files: &[&str]) -> bool {
    matcher(pattern).is_some_and(|m| files.iter().any(|f| m.is_match(f)))
}

/// `srcs` from candidate inclusions and exclusions: the inclusions that match a file,
/// then each exclusion (without its `!`) that takes back a file they select, so the
/// list has no pattern that matches nothing.
fn sources(includes: &[String], excludes: &[String], files: &[&str]) -> Vec<String> {
    let includes: Vec<String> = includes
        .iter()
        .filter(|p| matches_any(p, files))
        .cloned()
        .collect();
    let include_matchers: Vec<_> = includes.iter().filter_map(|p| matcher(p)).collect();
    let mut selected: Vec<&str> = files
        .iter()
        .copied()
        .filter(|f| include_matchers.iter().any(|m| m.is_match(f)))
        .collect();
    let mut out = includes;
    for exclude in excludes {
        let Some(m) = matcher(exclude) else { continue };
        let before = selected.len();
        selected.retain(|f| !m.is_match(f));
        if selected.len() < before {
            out.push(format!("!{exclude}"));
        }
    }
    out
}

fn string(value: &str) -> AttrValue {
    AttrValue::String(value.to_owned())
}

/// Every target the facts describe, package by package, and warnings about what they
/// leave out. `packages` are the package directories files are divided by (the existing
/// packages and those the facts describe).
pub(crate) fn propose(
    facts: &EcosystemFacts,
    tree: &Tree<'_>,
    warnings: &mut Vec<String>,
) -> Vec<Proposal> {
    let mut out = Vec::new();
    cargo(facts, tree, warnings, &mut out);
    python(facts, tree, &mut out);
    node(facts, tree, warnings, &mut out);
    go(facts, tree, warnings, &mut out);
    shell(facts, &mut out);
    // Two ecosystems in one directory may propose one name: the later gets a suffix.
    let mut taken: BTreeSet<TargetRef> = BTreeSet::new();
    for proposal in &mut out {
        let base = proposal.name.clone();
        let mut n = 2;
        while taken.contains(&proposal.id()) {
            proposal.name = format!("{base}{n}");
            n += 1;
        }
        taken.insert(proposal.id());
    }
    out
}

/// The package directories the facts describe.
pub(crate) fn described_dirs(facts: &EcosystemFacts) -> BTreeSet<String> {
    let mut dirs = BTreeSet::new();
    dirs.extend(facts.cargo.iter().map(|p| p.dir.clone()));
    dirs.extend(facts.python.iter().map(|p| p.dir.clone()));
    dirs.extend(facts.node.iter().map(|p| p.dir.clone()));
    dirs.extend(facts.go.iter().map(|p| p.dir.clone()));
    dirs.extend(facts.shell.iter().map(|p| p.dir.clone()));
    dirs
}

fn cargo(
    facts: &EcosystemFacts,
    tree: &Tree<'_>,
    warnings: &mut Vec<String>,
    out: &mut Vec<Proposal>,
) {
    let libs: BTreeMap<&str, TargetRef> = facts
        .cargo
        .iter()
        .filter(|p| p.lib.is_some())
        .map(|p| {
            (
                p.dir.as_str(),
                TargetRef {
                    package: p.dir.clone(),
                    name: pascal(&p.name),
                },
            )
        })
        .collect();
    let refs = |dirs: &[String], own: &str| -> Vec<TargetRef> {
        let mut refs: Vec<TargetRef> = dirs
            .iter()
            .filter(|d| d.as_str() != own)
            .filter_map(|d| libs.get(d.as_str()).cloned())
            .collect();
        refs.sort();
        refs.dedup();
        refs
    };
    for package in &facts.cargo {
        let files = tree.owned(&package.dir);
        let source = join(&package.dir, "Cargo.toml");
        let base = pascal(&package.name);
        // The build script joins `srcs` when the `src/` glob does not already cover it,
        // so that editing it rebuilds the crates (Cargo runs it before compiling them).
        // A build script of several files (`build/main.rs` and its modules) by its
        // directory.
        let build: Vec<String> = match package.build_script.as_deref() {
            Some(b) if b.starts_with("src/") || !files.contains(&b) => Vec::new(),
            Some(b) => match b.rsplit_once('/') {
                Some((dir, "main.rs")) => sources(&[format!("{dir}/**/*.rs")], &[], &files),
                _ => vec![b.to_owned()],
            },
            None => Vec::new(),
        };
        let crate_srcs = sources(&["src/**/*.rs".to_owned()], &[], &files)
            .into_iter()
            .chain(build.clone())
            .collect::<Vec<_>>();
        let deps = refs(&package.path_deps, &package.dir);
        let edition = string(&package.edition);
        // `links` is only read with `c_deps`, but it is the Cargo.toml's word: recorded
        // on every target, so that adding `c_deps` by hand needs nothing else.
        let links = package
            .links
            .as_ref()
            .map(|l| ("links".to_owned(), string(l)));
        let features = |target: &super::facts::CargoTarget| {
            (!target.required_features.is_empty()).then(|| {
                (
                    "features".to_owned(),
                    AttrValue::List(target.required_features.iter().map(|f| string(f)).collect()),
                )
            })
        };
        const OWNED: &[&str] = &[
            "crate_name",
            "edition",
            "manifest_path",
            "package",
            "links",
            "example",
        ];
        if let Some(lib) = &package.lib {
            let mut p = Proposal::new(&package.dir, base.clone(), "rust_library", source.clone());
            p.srcs = crate_srcs.clone();
            p.deps = deps.clone();
            p.attrs = vec![
                ("crate_name".to_owned(), string(lib)),
                ("edition".to_owned(), edition.clone()),
            ];
            p.attrs.extend(links.clone());
            p.owned_attrs = OWNED;
            out.push(p);
        }
        for bin in &package.bins {
            let mut name = pascal(&bin.name);
            if name == base && package.lib.is_some() {
                name.push_str("Bin");
            }
            let mut p = Proposal::new(&package.dir, name, "rust_binary", source.clone());
            p.srcs = crate_srcs.clone();
            if !bin.path.starts_with("src/") && files.contains(&bin.path.as_str()) {
                p.srcs.push(bin.path.clone());
            }
            p.deps = deps.clone();
            p.attrs = vec![
                ("crate_name".to_owned(), string(&bin.name)),
                ("edition".to_owned(), edition.clone()),
            ];
            p.attrs.extend(links.clone());
            p.attrs.extend(features(bin));
            p.owned_attrs = OWNED;
            out.push(p);
        }
        // An example builds against the library and the dev-dependencies, as `cargo
        // build --example` does.
        let mut example_deps = package.path_deps.clone();
        example_deps.extend(package.dev_path_deps.iter().cloned());
        let example_deps = refs(&example_deps, &package.dir);
        for example in &package.examples {
            let name = format!("{}Example", pascal(&example.name));
            let mut p = Proposal::new(&package.dir, name, "rust_binary", source.clone());
            p.srcs = crate_srcs.clone();
            // A one-file example (`examples/demo.rs`), or a directory of them
            // (`examples/demo/main.rs`).
            let own = match example.path.rsplit_once('/') {
                Some((dir, "main.rs")) if dir.starts_with("examples/") => {
                    sources(&[format!("{dir}/**/*.rs")], &[], &files)
                }
                _ if files.contains(&example.path.as_str()) => vec![example.path.clone()],
                _ => Vec::new(),
            };
            p.srcs
                .extend(own.into_iter().filter(|s| !s.starts_with("src/")));
            p.deps = example_deps.clone();
            p.attrs = vec![
                ("example".to_owned(), string(&example.name)),
                ("edition".to_owned(), edition.clone()),
            ];
            p.attrs.extend(links.clone());
            p.attrs.extend(features(example));
            p.owned_attrs = OWNED;
            out.push(p);
        }
        if !package.benches.is_empty() {
            warnings.push(format!(
                "{source}: the benchmarks ({}) get no target: no kind runs `cargo bench` (the package's `rust_test` compiles them as tests only when they set `test = true`)",
                package
                    .benches
                    .iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if package.has_tests {
            let mut p = Proposal::new(
                &package.dir,
                format!("{base}Test"),
                "rust_test",
                source.clone(),
            );
            let globs: Vec<String> = ["src", "tests", "examples", "benches"]
                .iter()
                .map(|d| format!("{d}/**/*.rs"))
                .collect();
            p.srcs = sources(&globs, &[], &files)
                .into_iter()
                .chain(build)
                .collect();
            let mut all: Vec<String> = package.path_deps.clone();
            all.extend(package.dev_path_deps.iter().cloned());
            p.deps = refs(&all, &package.dir);
            p.attrs = vec![("edition".to_owned(), edition)];
            p.attrs.extend(links);
            p.owned_attrs = &[
                "edition",
                "manifest_path",
                "package",
                "crate_name",
                "doctests",
                "links",
            ];
            p.owned_roles = &["crate_under_test"];
            out.push(p);
        }
    }
}

fn python(facts: &EcosystemFacts, tree: &Tree<'_>, out: &mut Vec<Proposal>) {
    let has_library =
        |p: &super::facts::PythonProject| !p.packages.is_empty() || !p.modules.is_empty();
    let libs: BTreeMap<&str, TargetRef> = facts
        .python
        .iter()
        .filter(|p| has_library(p))
        .map(|p| {
            (
                p.dir.as_str(),
                TargetRef {
                    package: p.dir.clone(),
                    name: pascal(&p.name),
                },
            )
        })
        .collect();
    for project in &facts.python {
        let files = tree.owned(&project.dir);
        let base = pascal(&project.name);
        let source = project.config_file.clone();
        let path_deps: Vec<TargetRef> = project
            .path_deps
            .iter()
            .filter(|d| **d != project.dir)
            .filter_map(|d| libs.get(d.as_str()).cloned())
            .collect();
        let mut lib = None;
        if has_library(project) {
            let mut p = Proposal::new(&project.dir, base.clone(), "python_library", source.clone());
            let globs: Vec<String> = project
                .packages
                .iter()
                .map(|pkg| format!("{pkg}/**/*.py"))
                .chain(project.modules.iter().cloned())
                .collect();
            p.srcs = sources(&globs, &[], &files);
            if project.import_root != "." {
                p.attrs = vec![(
                    "imports".to_owned(),
                    AttrValue::List(vec![string(&project.import_root)]),
                )];
            }
            p.owned_attrs = &["imports"];
            p.deps = path_deps.clone();
            lib = Some(p.id());
            out.push(p);
        }
        let Some(tests) = &project.tests else {
            continue;
        };
        let test_glob = format!("{tests}/**/*.py");
        if !matches_any(&test_glob, &files) {
            continue;
        }
        let kind = match project.runner {
            PythonRunner::Pytest => "pytest_test",
            PythonRunner::Unittest => "unittest_test",
        };
        let mut p = Proposal::new(&project.dir, format!("{base}Test"), kind, source);
        p.srcs = vec![test_glob];
        p.deps = lib.into_iter().chain(path_deps).collect();
        match project.runner {
            PythonRunner::Pytest => {
                let extra: Vec<&String> = project
                    .pytest_files
                    .iter()
                    .filter(|f| files.contains(&f.as_str()) && !f.starts_with(&format!("{tests}/")))
                    .collect();
                p.srcs.extend(extra.into_iter().cloned());
            }
            PythonRunner::Unittest => {
                p.attrs.push(("start_directory".to_owned(), string(tests)));
                if project.tests_package {
                    p.attrs
                        .push(("top_level_directory".to_owned(), string(".")));
                }
                p.owned_attrs = &["start_directory", "top_level_directory"];
            }
        }
        out.push(p);
    }
}

const NODE_EXTENSIONS: [&str; 3] = ["js", "mjs", "cjs"];

/// The files `node --test` runs by itself, as globs (its default patterns).
fn node_test_globs() -> Vec<String> {
    let mut out = Vec::new();
    for ext in NODE_EXTENSIONS {
        out.push(format!("test/**/*.{ext}"));
        for form in ["*.test", "*-test", "*_test", "test-*", "test"] {
            out.push(format!("**/{form}.{ext}"));
        }
    }
    out
}

fn node(
    facts: &EcosystemFacts,
    tree: &Tree<'_>,
    warnings: &mut Vec<String>,
    out: &mut Vec<Proposal>,
) {
    let test_globs = node_test_globs();
    let test_matchers: Vec<_> = test_globs.iter().filter_map(|g| matcher(g)).collect();
    let is_test = |f: &str| test_matchers.iter().any(|m| m.is_match(f));
    let is_js = |f: &str| {
        NODE_EXTENSIONS
            .iter()
            .any(|e| f.ends_with(&format!(".{e}")))
    };
    // Which packages have a library, by package name.
    let mut libs: BTreeMap<&str, TargetRef> = BTreeMap::new();
    let mut lib_of_dir: BTreeMap<&str, TargetRef> = BTreeMap::new();
    for package in &facts.node {
        let files = tree.owned(&package.dir);
        if files.iter().any(|f| is_js(f) && !is_test(f)) {
            let name = if package.name.is_empty() {
                last_segment(&package.dir)
            } else {
                package.name.as_str()
            };
            let id = TargetRef {
                package: package.dir.clone(),
                name: pascal(name),
            };
            if !package.name.is_empty() {
                libs.insert(&package.name, id.clone());
            }
            lib_of_dir.insert(&package.dir, id);
        }
    }
    for package in &facts.node {
        let files = tree.owned(&package.dir);
        let source = join(&package.dir, "package.json");
        let workspace_deps = |names: &[String]| -> Vec<TargetRef> {
            let mut refs: Vec<TargetRef> = names
                .iter()
                .filter_map(|n| libs.get(n.as_str()).cloned())
                .filter(|r| r.package != package.dir)
                .collect();
            refs.sort();
            refs.dedup();
            refs
        };
        let lib = lib_of_dir.get(package.dir.as_str()).cloned();
        let base = lib.as_ref().map_or_else(
            || {
                pascal(if package.name.is_empty() {
                    last_segment(&package.dir)
                } else {
                    &package.name
                })
            },
            |l| l.name.clone(),
        );
        if let Some(lib) = &lib {
            let mut p = Proposal::new(&package.dir, lib.name.clone(), "js_library", source.clone());
            let includes: Vec<String> = std::iter::once("package.json".to_owned())
                .chain(NODE_EXTENSIONS.iter().map(|e| format!("**/*.{e}")))
                .collect();
            p.srcs = sources(&includes, &test_globs, &files);
            p.deps = workspace_deps(&package.dependencies);
            out.push(p);
        }
        // Each command of `bin`: the package's sources (what its entry file may load by
        // relative paths), the entry file as `main`.
        for (command, main) in &package.bins {
            if !files.contains(&main.as_str()) {
                warnings.push(format!(
                    "{source}: the `bin` entry `{command}` names `{main}`, which does not exist: no target describes it"
                ));
                continue;
            }
            let mut name = pascal(command);
            if lib.as_ref().is_some_and(|l| l.name == name) {
                name.push_str("Bin");
            }
            let mut p = Proposal::new(&package.dir, name, "node_binary", source.clone());
            let includes: Vec<String> = std::iter::once("package.json".to_owned())
                .chain(NODE_EXTENSIONS.iter().map(|e| format!("**/*.{e}")))
                .collect();
            p.srcs = sources(&includes, &test_globs, &files);
            if !is_js(main) || is_test(main) {
                p.srcs.push(main.clone());
            }
            p.deps = workspace_deps(&package.dependencies);
            p.attrs = vec![("main".to_owned(), string(main))];
            p.owned_attrs = &["main"];
            out.push(p);
        }
        let tests: Vec<&str> = files.iter().copied().filter(|f| is_test(f)).collect();
        if tests.is_empty() {
            continue;
        }
        match &package.test_script {
            Some(script) if !package.node_test => {
                warnings.push(format!(
                    "{source}: the tests run by `{script}` are not described: only Node's own test runner (`node --test`) is"
                ));
                continue;
            }
            _ => {}
        }
        let mut p = Proposal::new(&package.dir, format!("{base}Test"), "node_test", source);
        p.srcs = sources(&test_globs, &[], &tests);
        let mut names = package.dependencies.clone();
        names.extend(package.dev_dependencies.iter().cloned());
        p.deps = lib.into_iter().chain(workspace_deps(&names)).collect();
        out.push(p);
    }
}

fn go(
    facts: &EcosystemFacts,
    tree: &Tree<'_>,
    warnings: &mut Vec<String>,
    out: &mut Vec<Proposal>,
) {
    let name_of = |package: &super::facts::GoPackage| {
        let segment = last_segment(&package.import_path);
        pascal(if segment.is_empty() {
            &package.name
        } else {
            segment
        })
    };
    let by_import: BTreeMap<&str, (TargetRef, bool)> = facts
        .go
        .iter()
        .map(|p| {
            (
                p.import_path.as_str(),
                (
                    TargetRef {
                        package: p.dir.clone(),
                        name: name_of(p),
                    },
                    p.name != "main",
                ),
            )
        })
        .collect();
    let refs = |imports: &[String], own: &str| -> Vec<TargetRef> {
        let mut refs: Vec<TargetRef> = imports
            .iter()
            .filter(|i| i.as_str() != own)
            .filter_map(|i| by_import.get(i.as_str()))
            .filter(|(_, library)| *library)
            .map(|(r, _)| r.clone())
            .collect();
        refs.sort();
        refs.dedup();
        refs
    };
    for package in &facts.go {
        let files = tree.owned(&package.dir);
        let in_dir: Vec<&str> = files
            .iter()
            .copied()
            .filter(|f| !f.contains('/') && f.ends_with(".go"))
            .collect();
        let tests_on_disk: BTreeSet<&str> = in_dir
            .iter()
            .copied()
            .filter(|f| f.ends_with("_test.go"))
            .collect();
        let plain_on_disk: BTreeSet<&str> = in_dir
            .iter()
            .copied()
            .filter(|f| !f.ends_with("_test.go"))
            .collect();
        let compiled: BTreeSet<&str> = package.go_files.iter().map(String::as_str).collect();
        let test_files: BTreeSet<&str> = package.test_files.iter().map(String::as_str).collect();
        let name = name_of(package);
        let binary = package.name == "main";
        let kind = if binary { "go_binary" } else { "go_library" };
        let mut p = Proposal::new(&package.dir, name.clone(), kind, package.go_mod.clone());
        // The `_test.go` files too: the go command reads every `.go` file of a package
        // directory (for build constraints) when it compiles a package importing it.
        p.srcs = if compiled == plain_on_disk {
            vec!["*.go".to_owned()]
        } else {
            compiled
                .iter()
                .chain(&tests_on_disk)
                .map(|f| (*f).to_owned())
                .collect()
        };
        p.deps = refs(&package.imports, &package.import_path);
        let id = p.id();
        out.push(p);
        if test_files.is_empty() {
            continue;
        }
        if binary {
            warnings.push(format!(
                "{}: the tests of `{}` (package main) are not described: a go_test needs a go_library under test",
                join(&package.dir, "*_test.go"),
                package.import_path
            ));
            continue;
        }
        let mut t = Proposal::new(
            &package.dir,
            format!("{name}Test"),
            "go_test",
            package.go_mod.clone(),
        );
        t.srcs = if test_files == tests_on_disk {
            vec!["*_test.go".to_owned()]
        } else {
            test_files.iter().map(|f| (*f).to_owned()).collect()
        };
        t.roles = vec![("package_under_test", vec![id])];
        t.owned_roles = &["package_under_test"];
        t.deps = refs(&package.test_imports, &package.import_path);
        out.push(t);
    }
}

fn shell(facts: &EcosystemFacts, out: &mut Vec<Proposal>) {
    for tests in &facts.shell {
        for script in &tests.scripts {
            let stem = last_segment(script).trim_end_matches(".sh");
            let mut name = pascal(stem);
            if !name.ends_with("Test") {
                name.push_str("Test");
            }
            let mut p = Proposal::new(&tests.dir, name, "sh_test", join(&tests.dir, script));
            p.srcs = vec![script.clone()];
            out.push(p);
        }
    }
}
