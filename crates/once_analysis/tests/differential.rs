//! Randomised differential test: after every random edit, the warm database answers
//! exactly what a freshly loaded database answers, file digests and action plans included.
//!
//! Edits cover manifests (`srcs` with exclusions among them), project modules (`.star`),
//! source contents, metadata-only changes (touches, `chmod`s), file ↔ directory swaps and
//! symbolic links (to files of the package or of another, to other links, to nothing, out of the workspace, to hidden files and to
//! directories; pointed elsewhere; their targets appearing and going, with events naming
//! only the target); the warm database hears of them
//! through precise events, or only through a rescan (as after a watcher overflow), and
//! some rescans follow no change at all.
//!
//! `ONCE_DIFF_STEPS` sets the number of steps (default 10,000 in an optimised build, as
//! `./.ci/test` runs it, and 1,000 in a debug build, which the same script runs first) and `ONCE_DIFF_SEED` the seed; a
//! failure prints both plus the edit history so it can be replayed.
//!
//! The seed workspace is a fixture; the edits are random, so they stay code.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test reads its settings from the environment and times itself"
)]

use std::path::PathBuf;
use std::sync::Arc;

use once_analysis::{Analysis, AnalysisHost, MemorySystem, System as _};
use once_db::ChangeEvent;
use once_fixture::Fixture;

const ROOT: &str = "/ws";
const KINDS: &[&str] = &[
    "rust_library",
    "rust_binary",
    "rust_test",
    "sh_test",
    "filegroup",
    "sh_binary",
    "star_kind",
];

/// The project module the root manifest registers, in its variants: the kind targets use,
/// the same kind documented differently, the kind with a build implementation, the kind
/// gone, and a syntax error.
const MODULE_PATH: &str = "modules/kinds.star";
const MODULE_VARIANTS: &[&str] = &[
    "target_kind(\"star_kind\", \"A kind from a module.\")\n",
    "def _b(ctx):\n    out = ctx.build_dir + \"/list.txt\"\n    actions.write(out, \"\\n\".join(ctx.srcs + [o for d in ctx.deps for o in d.outputs]))\n    return [out]\n\ntarget_kind(\"star_kind\", \"A kind from a module.\", deps = [dep(providers = [\"files\"])], providers = [\"files\"], capabilities = [capability(\"build\")], implementations = {\"build\": _b})\n",
    "target_kind(\"star_kind\", \"A kind from a module, reworded.\")\n",
    "target_kind(\"other_kind\", \"Not the kind targets use.\")\n",
    "target_kind(\"star_kind\",\n",
];

/// The seed workspace: the root registers the module and owns `README.md`; two packages
/// without targets hold one source file each. The random edits that follow are code, on a
/// model of the workspace ([`World`]) that must describe this fixture exactly.
const SEED: &str = r#"
    //- /once.toml
    [workspace]

    [modules]
    paths = ["modules/*.star"]

    //- /modules/kinds.star
    target_kind("star_kind", "A kind from a module.")
    //- /README.md

    //- /libs/a/once.toml
    //- /libs/a/src/lib.rs

    //- /apps/b/once.toml
    //- /apps/b/src/main.rs

"#;

/// A small deterministic PRNG (xorshift64*), so failures replay from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

#[derive(Clone, Debug)]
struct Target {
    name: String,
    kind: &'static str,
    deps: Vec<String>,
    srcs: Vec<String>,
    private: bool,
}

#[derive(Clone, Debug)]
struct Package {
    path: String,
    targets: Vec<Target>,
    files: Vec<String>,
    broken: bool,
}

impl Package {
    fn manifest_text(&self) -> String {
        let mut text = String::new();
        if self.path.is_empty() {
            text.push_str("[workspace]\n\n[modules]\npaths = [\"modules/*.star\"]\n\n");
        }
        for t in &self.targets {
            text.push_str(&format!(
                "[[target]]\nname = \"{}\"\nkind = \"{}\"\n",
                t.name, t.kind
            ));
            let quote = |items: &[String]| {
                items
                    .iter()
                    .map(|i| format!("\"{i}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            text.push_str(&format!("srcs = [{}]\n", quote(&t.srcs)));
            if !t.deps.is_empty() {
                text.push_str(&format!("deps = [{}]\n", quote(&t.deps)));
            }
            if t.private {
                text.push_str("visibility = [\"private\"]\n");
            }
            text.push('\n');
        }
        if self.broken {
            text.push_str("[[target]\nname = = \"oops\n");
        }
        text
    }
}

struct World {
    system: MemorySystem,
    packages: Vec<Package>,
    counter: usize,
    module_variant: usize,
    /// Workspace-relative paths of symbolic links (package files, though the model's
    /// edits leave them out of `files`).
    symlinks: Vec<String>,
}

impl World {
    /// Asserts the model describes exactly the files of `fixture`, byte for byte: the
    /// manifests the packages render, a line break in each of their files, the module in
    /// its current variant, and nothing else.
    fn assert_models(&self, fixture: &Fixture) {
        let mut expected = vec![(
            MODULE_PATH.to_owned(),
            MODULE_VARIANTS[self.module_variant].to_owned(),
        )];
        for (p, package) in self.packages.iter().enumerate() {
            expected.push((self.full_path(p, "once.toml"), package.manifest_text()));
            for file in &package.files {
                expected.push((self.full_path(p, file), "\n".to_owned()));
            }
        }
        let mut written: Vec<(String, String)> = fixture
            .files
            .iter()
            .map(|f| (f.path.clone(), f.text.clone()))
            .collect();
        expected.sort();
        written.sort();
        assert_eq!(written, expected, "the seed fixture and its model disagree");
    }

    fn abs(path: &str) -> PathBuf {
        PathBuf::from(format!("{ROOT}/{path}"))
    }

    fn write_manifest(&self, package: &Package) -> ChangeEvent {
        let path = if package.path.is_empty() {
            "once.toml".to_owned()
        } else {
            format!("{}/once.toml", package.path)
        };
        self.system
            .write(World::abs(&path), package.manifest_text());
        ChangeEvent::Changed(World::abs(&path))
    }

    fn all_ids(&self) -> Vec<String> {
        self.packages
            .iter()
            .flat_map(|p| {
                p.targets.iter().map(move |t| {
                    if p.path.is_empty() {
                        t.name.clone()
                    } else {
                        format!("{}/{}", p.path, t.name)
                    }
                })
            })
            .collect()
    }

    /// Applies one random edit; the warm database hears of it through its precise events
    /// or, one time in six, only through a rescan.
    fn edit(&mut self, rng: &mut Rng) -> (Vec<ChangeEvent>, String) {
        let (events, description) = self.edit_files(rng);
        if !events.is_empty() && rng.chance(16) {
            return (
                vec![ChangeEvent::Rescan],
                format!("{description} (seen by a rescan)"),
            );
        }
        (events, description)
    }

    /// The workspace-relative path of a package-relative file.
    fn full_path(&self, p: usize, file: &str) -> String {
        if self.packages[p].path.is_empty() {
            file.to_owned()
        } else {
            format!("{}/{file}", self.packages[p].path)
        }
    }

    /// Applies one random edit to the model and the file system; returns the events and a
    /// description.
    fn edit_files(&mut self, rng: &mut Rng) -> (Vec<ChangeEvent>, String) {
        self.counter += 1;
        let n = self.counter;
        let p = rng.below(self.packages.len());
        match rng.below(22) {
            12 => {
                self.module_variant =
                    (self.module_variant + 1 + rng.below(3)) % MODULE_VARIANTS.len();
                self.system.write(
                    World::abs(MODULE_PATH),
                    MODULE_VARIANTS[self.module_variant],
                );
                (
                    vec![ChangeEvent::Changed(World::abs(MODULE_PATH))],
                    format!("module variant {}", self.module_variant),
                )
            }
            13 => {
                // A rescan with or without a metadata-only change (touch).
                let touched = self.interesting_paths();
                if rng.chance(50) && !touched.is_empty() {
                    let path = touched[rng.below(touched.len())].clone();
                    self.system.touch(&World::abs(&path));
                    (vec![ChangeEvent::Rescan], format!("touch {path}, rescan"))
                } else {
                    (vec![ChangeEvent::Rescan], "rescan, nothing changed".into())
                }
            }
            14 => {
                // A file becomes a directory holding one file.
                let package = &self.packages[p];
                if package.files.is_empty() {
                    return (Vec::new(), "no file to turn into a directory".into());
                }
                let i = rng.below(package.files.len());
                let file = package.files[i].clone();
                let inner = format!("{file}/inner{n}.rs");
                let (path, inner_path) = (self.full_path(p, &file), self.full_path(p, &inner));
                self.system.remove(&World::abs(&path));
                self.system
                    .write(World::abs(&inner_path), "fn inner() {}\n");
                self.packages[p].files[i] = inner;
                (
                    vec![ChangeEvent::Rescan],
                    format!("file {path} becomes a directory"),
                )
            }
            15 => {
                // A directory of one file becomes a file.
                let package = &self.packages[p];
                let Some(i) = package.files.iter().position(|f| f.contains("/inner")) else {
                    return (Vec::new(), "no directory to turn into a file".into());
                };
                let inner = package.files[i].clone();
                let dir = inner.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
                if package
                    .files
                    .iter()
                    .filter(|f| f.starts_with(&format!("{dir}/")))
                    .count()
                    != 1
                {
                    return (Vec::new(), "the directory holds more than one file".into());
                }
                let (inner_path, path) = (self.full_path(p, &inner), self.full_path(p, &dir));
                self.system.remove(&World::abs(&inner_path));
                self.system
                    .write(World::abs(&path), format!("// file again {n}\n"));
                self.packages[p].files[i] = dir;
                (
                    vec![ChangeEvent::Rescan],
                    format!("directory {path} becomes a file"),
                )
            }
            16 => {
                // A source file is replaced by a symbolic link to `README.md`.
                let package = &self.packages[p];
                if package.files.is_empty() {
                    return (Vec::new(), "no file to replace by a link".into());
                }
                let file = package.files[rng.below(package.files.len())].clone();
                let path = self.full_path(p, &file);
                self.system.remove(&World::abs(&path));
                self.system
                    .symlink(World::abs(&path), World::abs("README.md"));
                self.packages[p].files.retain(|f| *f != file);
                self.symlinks.push(path.clone());
                (
                    vec![ChangeEvent::Deleted(World::abs(&path))],
                    format!("replace {path} by a link"),
                )
            }
            17 => {
                // A symbolic link is removed, or replaced by a regular file again.
                if self.symlinks.is_empty() {
                    return (Vec::new(), "no link to change".into());
                }
                let path = self.symlinks.remove(rng.below(self.symlinks.len()));
                self.system.remove_symlink(&World::abs(&path));
                let owner = self
                    .packages
                    .iter()
                    .enumerate()
                    .filter(|(_, package)| {
                        package.path.is_empty() || path.starts_with(&format!("{}/", package.path))
                    })
                    .max_by_key(|(_, package)| package.path.len())
                    .map(|(i, _)| i);
                match owner {
                    Some(owner) if rng.chance(50) => {
                        self.system
                            .write(World::abs(&path), format!("// restored {n}\n"));
                        let prefix = &self.packages[owner].path;
                        let relative = if prefix.is_empty() {
                            path.clone()
                        } else {
                            path[prefix.len() + 1..].to_owned()
                        };
                        self.packages[owner].files.push(relative);
                        (
                            vec![ChangeEvent::Created(World::abs(&path))],
                            format!("link {path} becomes a file"),
                        )
                    }
                    _ => (
                        vec![ChangeEvent::Deleted(World::abs(&path))],
                        format!("remove link {path}"),
                    ),
                }
            }
            18 => {
                // A new link below a package's `src` (so `src/**/*.rs` globs match it), to
                // a file of this or another package, another link (a chain), nothing, a
                // file outside the workspace, a hidden file or a directory.
                let dir = if self.packages[p].path.is_empty() {
                    "src".to_owned()
                } else {
                    format!("{}/src", self.packages[p].path)
                };
                let path = format!("{dir}/l{n}.rs");
                let target = self.link_target(rng);
                self.system.symlink(World::abs(&path), &target);
                self.symlinks.push(path.clone());
                let events = if rng.chance(50) {
                    vec![ChangeEvent::Created(World::abs(&path))]
                } else {
                    vec![ChangeEvent::Rescan]
                };
                (events, format!("link {path} -> {}", target.display()))
            }
            19 => {
                // A link pointed elsewhere (the event names the link).
                if self.symlinks.is_empty() {
                    return (Vec::new(), "no link to point elsewhere".into());
                }
                let path = self.symlinks[rng.below(self.symlinks.len())].clone();
                let target = self.link_target(rng);
                self.system.symlink(World::abs(&path), &target);
                (
                    vec![
                        ChangeEvent::Deleted(World::abs(&path)),
                        ChangeEvent::Created(World::abs(&path)),
                    ],
                    format!("point {path} at {}", target.display()),
                )
            }
            20 => {
                // What a dangling link leads to appears, or a linked-to file goes: the event
                // names the target, never the link.
                let missing = format!("libs/a/src/later{}.rs", n % 3);
                let absolute = World::abs(&missing);
                if self.system.is_file(&absolute) {
                    self.system.remove(&absolute);
                    (
                        vec![ChangeEvent::Deleted(absolute)],
                        format!("remove {missing}"),
                    )
                } else {
                    self.system.write(&absolute, format!("// appeared {n}\n"));
                    (
                        vec![ChangeEvent::Created(absolute)],
                        format!("create {missing}"),
                    )
                }
            }
            21 => {
                // A `chmod`: permission bits are in static keys (the watcher reports it).
                let package = &self.packages[p];
                if package.files.is_empty() {
                    return (Vec::new(), "no file to chmod".into());
                }
                let file = &package.files[rng.below(package.files.len())];
                let path = self.full_path(p, file);
                let mode = if rng.chance(50) { 0o755 } else { 0o600 };
                self.system.chmod(&World::abs(&path), mode);
                (
                    vec![ChangeEvent::Changed(World::abs(&path))],
                    format!("chmod {mode:o} {path}"),
                )
            }
            0 | 1 => {
                let ids = self.all_ids();
                let mut deps = Vec::new();
                for _ in 0..rng.below(3) {
                    if rng.chance(85) && !ids.is_empty() {
                        deps.push(ids[rng.below(ids.len())].clone());
                    } else {
                        deps.push(format!("nowhere/Missing{n}"));
                    }
                }
                let files = &self.packages[p].files;
                let srcs = if !files.is_empty() && rng.chance(80) {
                    vec![files[rng.below(files.len())].clone()]
                } else if !files.is_empty() && rng.chance(50) {
                    // Every file but one (an exclusion), and whatever appears later.
                    vec!["**".into(), format!("!{}", files[rng.below(files.len())])]
                } else {
                    vec!["src/**/*.rs".into()]
                };
                let kind = KINDS[rng.below(KINDS.len())];
                let name = format!("T{n}");
                self.packages[p].targets.push(Target {
                    name: name.clone(),
                    kind,
                    deps,
                    srcs,
                    private: rng.chance(10),
                });
                (
                    vec![self.write_manifest(&self.packages[p])],
                    format!("add target {name} ({kind}) to `{}`", self.packages[p].path),
                )
            }
            2 => {
                if self.packages[p].targets.is_empty() {
                    return (Vec::new(), "nothing to remove".into());
                }
                let i = rng.below(self.packages[p].targets.len());
                let removed = self.packages[p].targets.remove(i);
                (
                    vec![self.write_manifest(&self.packages[p])],
                    format!(
                        "remove target {} from `{}`",
                        removed.name, self.packages[p].path
                    ),
                )
            }
            3 => {
                let ids = self.all_ids();
                let package = &mut self.packages[p];
                if package.targets.is_empty() || ids.is_empty() {
                    return (Vec::new(), "no dep to add".into());
                }
                let i = rng.below(package.targets.len());
                let dep = ids[rng.below(ids.len())].clone();
                package.targets[i].deps.push(dep.clone());
                let event = self.write_manifest(&self.packages[p]);
                (
                    vec![event],
                    format!("add dep {dep} in `{}`", self.packages[p].path),
                )
            }
            4 => {
                let package = &mut self.packages[p];
                let Some(t) = package.targets.iter_mut().find(|t| !t.deps.is_empty()) else {
                    return (Vec::new(), "no dep to remove".into());
                };
                let removed = t.deps.remove(0);
                let event = self.write_manifest(&self.packages[p]);
                (
                    vec![event],
                    format!("remove dep {removed} in `{}`", self.packages[p].path),
                )
            }
            5 => {
                let package = &mut self.packages[p];
                let file = format!("src/f{n}.rs");
                package.files.push(file.clone());
                let path = if package.path.is_empty() {
                    file.clone()
                } else {
                    format!("{}/{file}", package.path)
                };
                self.system.write(World::abs(&path), "fn f() {}\n");
                (
                    vec![ChangeEvent::Created(World::abs(&path))],
                    format!("create {path}"),
                )
            }
            6 => {
                let package = &mut self.packages[p];
                if package.files.is_empty() {
                    return (Vec::new(), "no file to delete".into());
                }
                let file = package.files.remove(rng.below(package.files.len()));
                let path = if package.path.is_empty() {
                    file.clone()
                } else {
                    format!("{}/{file}", package.path)
                };
                self.system.remove(&World::abs(&path));
                (
                    vec![ChangeEvent::Deleted(World::abs(&path))],
                    format!("delete {path}"),
                )
            }
            7 => {
                self.packages[p].broken = !self.packages[p].broken;
                let what = if self.packages[p].broken {
                    "break"
                } else {
                    "fix"
                };
                (
                    vec![self.write_manifest(&self.packages[p])],
                    format!("{what} syntax of `{}`", self.packages[p].path),
                )
            }
            8 => {
                let path = format!("pkg{n}");
                let package = Package {
                    path: path.clone(),
                    targets: Vec::new(),
                    files: vec!["src/lib.rs".into()],
                    broken: false,
                };
                self.system
                    .write(World::abs(&format!("{path}/src/lib.rs")), "\n");
                let manifest = World::abs(&format!("{path}/once.toml"));
                self.system.write(&manifest, package.manifest_text());
                self.packages.push(package);
                (
                    vec![
                        ChangeEvent::Created(World::abs(&format!("{path}/src/lib.rs"))),
                        ChangeEvent::Created(manifest),
                    ],
                    format!("create package `{path}`"),
                )
            }
            9 => {
                if self.packages[p].path.is_empty() || self.packages.len() < 3 {
                    return (Vec::new(), "keep the root package".into());
                }
                let package = self.packages.remove(p);
                let mut events = Vec::new();
                for file in package
                    .files
                    .iter()
                    .map(|f| format!("{}/{f}", package.path))
                    .chain([format!("{}/once.toml", package.path)])
                {
                    self.system.remove(&World::abs(&file));
                    events.push(ChangeEvent::Deleted(World::abs(&file)));
                }
                (events, format!("delete package `{}`", package.path))
            }
            10 => {
                let package = &mut self.packages[p];
                if package.targets.is_empty() {
                    return (Vec::new(), "nothing to rename".into());
                }
                let i = rng.below(package.targets.len());
                let old = std::mem::replace(&mut package.targets[i].name, format!("R{n}"));
                let event = self.write_manifest(&self.packages[p]);
                (
                    vec![event],
                    format!("rename {old} to R{n} in `{}`", self.packages[p].path),
                )
            }
            _ => {
                let package = &self.packages[p];
                if package.files.is_empty() {
                    return (Vec::new(), "no file to touch".into());
                }
                let file = &package.files[rng.below(package.files.len())];
                let path = if package.path.is_empty() {
                    file.clone()
                } else {
                    format!("{}/{file}", package.path)
                };
                self.system
                    .write(World::abs(&path), format!("// edit {n}\n"));
                (
                    vec![ChangeEvent::Changed(World::abs(&path))],
                    format!("edit {path}"),
                )
            }
        }
    }

    /// Where a new or moved link leads: a file of a package, another link, a file that may
    /// come and go (`libs/a/src/laterN.rs`), a file outside the workspace, a hidden file,
    /// or a directory.
    fn link_target(&self, rng: &mut Rng) -> PathBuf {
        match rng.below(7) {
            0 | 1 => {
                let p = rng.below(self.packages.len());
                match self.packages[p].files.first() {
                    Some(file) => World::abs(&self.full_path(p, file)),
                    None => World::abs("README.md"),
                }
            }
            2 if !self.symlinks.is_empty() => {
                World::abs(&self.symlinks[rng.below(self.symlinks.len())])
            }
            2 | 3 => World::abs(&format!("libs/a/src/later{}.rs", rng.below(3))),
            4 => PathBuf::from("/elsewhere/secret.rs"),
            5 => World::abs(".hidden/h.rs"),
            _ => World::abs("libs/a/src"),
        }
    }

    /// Paths worth asking affected tests about: every file and manifest.
    fn interesting_paths(&self) -> Vec<String> {
        let mut paths = Vec::new();
        for package in &self.packages {
            let prefix = if package.path.is_empty() {
                String::new()
            } else {
                format!("{}/", package.path)
            };
            paths.push(format!("{prefix}once.toml"));
            paths.extend(package.files.iter().map(|f| format!("{prefix}{f}")));
        }
        paths.push(MODULE_PATH.to_owned());
        paths.extend(self.symlinks.iter().cloned());
        paths
    }
}

/// Everything compared between warm and cold databases, rendered as text.
fn answers(analysis: &Analysis, paths: &[String]) -> String {
    let targets = analysis.targets(None).expect("not cancelled");
    let validation = analysis.validate_workspace().expect("not cancelled");
    let tests = analysis.tests().expect("not cancelled");
    let mut out = format!("{targets:#?}\n{validation:#?}\n{tests:#?}\n");
    for path in paths {
        out.push_str(&format!(
            "{path}: {:?}\n",
            analysis
                .affected_tests(std::slice::from_ref(path))
                .expect("not cancelled")
        ));
    }
    out.push_str(&format!(
        "all: {:?}\n",
        analysis.affected_tests(&[]).expect("not cancelled")
    ));
    for path in paths {
        out.push_str(&format!(
            "digest of {path}: {:?}\n",
            analysis.file_digest(path).expect("not cancelled")
        ));
    }
    // The input digests of a spread of targets (all of them made each step twice as slow).
    for target in targets.iter().step_by((targets.len() / 4).max(1)) {
        out.push_str(&format!(
            "inputs of {}: {:?}\n",
            target.id,
            analysis.target_inputs(&target.id).expect("not cancelled")
        ));
    }
    // The build plans (with static keys) of two targets and their dependency closures.
    for target in targets.iter().step_by((targets.len() / 2).max(1)) {
        out.push_str(&format!(
            "plan of {}: {:?}\n",
            target.id,
            analysis
                .action_plan(&target.id, "build")
                .expect("not cancelled")
        ));
    }
    out
}

#[test]
fn warm_database_matches_a_fresh_one_after_every_edit() {
    let default_steps = if cfg!(debug_assertions) {
        1_000
    } else {
        10_000
    };
    let steps: usize = std::env::var("ONCE_DIFF_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_steps);
    let seed: u64 = std::env::var("ONCE_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0ACE_2026);
    let seed_fixture = Fixture::parse(SEED);
    let system = seed_fixture.system();
    let mut world = World {
        system: system.clone(),
        packages: vec![
            Package {
                path: String::new(),
                targets: Vec::new(),
                files: vec!["README.md".into()],
                broken: false,
            },
            Package {
                path: "libs/a".into(),
                targets: Vec::new(),
                files: vec!["src/lib.rs".into()],
                broken: false,
            },
            Package {
                path: "apps/b".into(),
                targets: Vec::new(),
                files: vec!["src/main.rs".into()],
                broken: false,
            },
        ],
        counter: 0,
        module_variant: 0,
        symlinks: Vec::new(),
    };
    world.assert_models(&seed_fixture);
    // Targets of links that are no workspace files (see `World::link_target`).
    system.write("/elsewhere/secret.rs", "// outside the workspace\n");
    system.write(format!("{ROOT}/.hidden/h.rs"), "// hidden\n");
    let mut warm = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from(ROOT));
    let mut rng = Rng(seed);
    let mut history = Vec::new();
    for step in 0..steps {
        let (events, description) = world.edit(&mut rng);
        history.push(description);
        warm.apply_changes(&events);
        // Compare on a sample of steps for the expensive path list, every step otherwise.
        let paths = world.interesting_paths();
        let sample: Vec<String> = (0..3)
            .filter_map(|_| paths.get(rng.below(paths.len())).cloned())
            .collect();
        let cold = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from(ROOT));
        let warm_answers = answers(&warm.analysis(), &sample);
        let cold_answers = answers(&cold.analysis(), &sample);
        if warm_answers != cold_answers {
            let recent: Vec<&String> = history.iter().rev().take(15).rev().collect();
            panic!(
                "step {step} (seed {seed}): warm and fresh answers differ after `{}`\nrecent edits: {recent:#?}\n--- warm ---\n{warm_answers}\n--- fresh ---\n{cold_answers}",
                history.last().map_or("", String::as_str)
            );
        }
        // Every tenth step, a fresh database primed on several threads (as the CLI does)
        // must answer the same, and priming the warm one must not change its answers.
        if step % 10 == 0 {
            let primed = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from(ROOT));
            primed.analysis().prime(3).expect("not cancelled");
            warm.analysis().prime(3).expect("not cancelled");
            for (which, host) in [("primed fresh", &primed), ("primed warm", &warm)] {
                let primed_answers = answers(&host.analysis(), &sample);
                assert!(
                    primed_answers == cold_answers,
                    "step {step} (seed {seed}): {which} answers differ\n--- {which} ---\n{primed_answers}\n--- fresh ---\n{cold_answers}"
                );
            }
        }
    }
}
