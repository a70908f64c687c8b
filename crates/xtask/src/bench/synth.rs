//! The deterministic generator of realistic synthetic workspaces (`gen-workspace`).
//!
//! A workspace is `packages` packages of `per_package` targets each, laid out as
//! `pkgs/g<group>/p<index>` (one hundred packages a group). Every package belongs to one
//! ecosystem (Rust, C, Python, JavaScript or shell) and is either a library package, whose
//! main target later packages of the same ecosystem may depend on, or a leaf (an app or a
//! test-only package) that nothing depends on. Library packages form long chains (each
//! often depends on the previous library of its ecosystem), a few hub libraries per
//! ecosystem are depended on by many packages (fan-in), and some packages depend on several
//! random earlier libraries (fan-out). Targets get `srcs` globs over tiny real files,
//! configurable attributes and some dependencies through `select`, and visibility rules
//! that every dependency satisfies, so the workspace validates without diagnostics.
//!
//! The same seed always writes the same bytes; the random numbers come from a small
//! xorshift generator, not from the operating system.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// A small deterministic pseudo-random generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Spread the seed so that small seeds differ in every bit; never zero.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Eco {
    Rust,
    C,
    Python,
    Js,
    Shell,
}

impl Eco {
    fn index(self) -> usize {
        self as usize
    }

    /// The kinds of its library, test and binary targets.
    fn kinds(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Eco::Rust => ("rust_library", "rust_test", "rust_binary"),
            Eco::C => ("c_library", "sh_test", "sh_binary"),
            Eco::Python => ("python_library", "pytest_test", "python_library"),
            Eco::Js => ("js_library", "node_test", "js_library"),
            Eco::Shell => ("filegroup", "sh_test", "sh_binary"),
        }
    }
}

/// What was generated: enough to drive the benchmarks and the peer's copy of the graph.
pub struct Generated {
    pub targets: usize,
    /// Each package's workspace-relative path, by index.
    pub package_paths: Vec<String>,
    /// Package-level dependencies (indices of packages another package's targets depend on).
    pub package_deps: Vec<BTreeSet<usize>>,
    /// Workspace-relative source files, one per target (the candidates for changed paths).
    pub source_files: Vec<String>,
    /// The manifest the warm benchmarks edit, workspace-relative.
    pub edited_manifest: String,
}

/// One target being written.
struct Target {
    name: String,
    kind: &'static str,
    srcs: Vec<String>,
    deps: Vec<String>,
    /// A `select` over deps: (linux branch, default branch).
    select_deps: Option<(Vec<String>, Vec<String>)>,
    roles: Vec<(&'static str, Vec<String>)>,
    visibility: Option<Vec<String>>,
    labels: Vec<String>,
    attrs: Vec<String>,
}

fn quoted(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|i| format!("\"{i}\"")).collect();
    format!("[{}]", inner.join(", "))
}

impl Target {
    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "[[target]]");
        let _ = writeln!(out, "name = \"{}\"", self.name);
        let _ = writeln!(out, "kind = \"{}\"", self.kind);
        let _ = writeln!(out, "srcs = {}", quoted(&self.srcs));
        match &self.select_deps {
            Some((linux, default)) => {
                let _ = writeln!(
                    out,
                    "deps = {{ select = {{ linux = {}, default = {} }} }}",
                    quoted(linux),
                    quoted(default)
                );
            }
            None if !self.deps.is_empty() => {
                let _ = writeln!(out, "deps = {}", quoted(&self.deps));
            }
            None => {}
        }
        if !self.roles.is_empty() {
            let roles: Vec<String> = self
                .roles
                .iter()
                .map(|(role, refs)| format!("{role} = {}", quoted(refs)))
                .collect();
            let _ = writeln!(out, "dependencies = {{ {} }}", roles.join(", "));
        }
        if let Some(visibility) = &self.visibility {
            let _ = writeln!(out, "visibility = {}", quoted(visibility));
        }
        if !self.labels.is_empty() {
            let _ = writeln!(out, "labels = {}", quoted(&self.labels));
        }
        if !self.attrs.is_empty() {
            let _ = writeln!(out, "\n[target.attrs]");
            for attr in &self.attrs {
                let _ = writeln!(out, "{attr}");
            }
        }
        out.push('\n');
    }
}

/// The file a target's glob matches, and the glob.
fn source_for(eco: Eco, role: Role, k: usize) -> (String, String, &'static str) {
    let dir = format!("t{k}");
    let (file, glob, body): (String, String, &'static str) = match (eco, role) {
        (Eco::Rust, Role::Binary) => (
            format!("{dir}/main.rs"),
            format!("{dir}/**/*.rs"),
            "fn main() {}\n",
        ),
        (Eco::Rust, Role::Test) => (
            format!("{dir}/it.rs"),
            format!("{dir}/**/*.rs"),
            "#[test]\nfn works() {}\n",
        ),
        (Eco::Rust, _) => (
            format!("{dir}/lib.rs"),
            format!("{dir}/**/*.rs"),
            "pub fn value() -> u32 { 1 }\n",
        ),
        (Eco::C, Role::Library) => (
            format!("{dir}/lib.c"),
            format!("{dir}/*.c"),
            "int value(void) { return 1; }\n",
        ),
        (Eco::C | Eco::Shell, Role::Test) => (
            format!("{dir}/check_test.sh"),
            format!("{dir}/*_test.sh"),
            "#!/usr/bin/env bash\ntrue\n",
        ),
        (Eco::C | Eco::Shell, Role::Binary) => (
            format!("{dir}/run.sh"),
            format!("{dir}/*.sh"),
            "#!/usr/bin/env bash\necho ok\n",
        ),
        (Eco::Shell, Role::Library) => {
            (format!("{dir}/data.txt"), format!("{dir}/*.txt"), "data\n")
        }
        (Eco::Python, Role::Test) => (
            format!("{dir}/test_value.py"),
            format!("{dir}/test_*.py"),
            "def test_value():\n    assert True\n",
        ),
        (Eco::Python, _) => (
            format!("{dir}/mod{k}/__init__.py"),
            format!("{dir}/**/*.py"),
            "VALUE = 1\n",
        ),
        (Eco::Js, Role::Test) => (
            format!("{dir}/value.test.js"),
            format!("{dir}/*.test.js"),
            "import test from \"node:test\";\ntest(\"value\", () => {});\n",
        ),
        (Eco::Js, _) => (
            format!("{dir}/index.js"),
            format!("{dir}/*.js"),
            "export const value = 1;\n",
        ),
    };
    (file, glob, body)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Library,
    Test,
    Binary,
}

/// Writes the workspace under `root` (cleared first) and describes it.
pub fn generate(
    root: &Path,
    packages: usize,
    per_package: usize,
    seed: u64,
) -> anyhow::Result<Generated> {
    anyhow::ensure!(packages > 0 && per_package > 0, "nothing to generate");
    super::recreate_dir(root)?;
    std::fs::write(
        root.join("once.toml"),
        "# Generated by `cargo run -p xtask -- gen-workspace`.\n\
         [workspace]\ninclude = [\"pkgs/**\"]\n\n\
         # Pinned so that `select` resolves the same way on every machine.\n\
         [workspace.configuration]\nos = \"linux\"\narch = \"x86_64\"\ntokens = [\"release\"]\n",
    )?;

    let mut rng = Rng::new(seed);
    // Library packages generated so far, per ecosystem: (package index, path).
    let mut libraries: [Vec<usize>; 5] = Default::default();
    let mut generated = Generated {
        targets: packages * per_package,
        package_paths: Vec::with_capacity(packages),
        package_deps: Vec::with_capacity(packages),
        source_files: Vec::with_capacity(packages * per_package),
        edited_manifest: String::new(),
    };
    let hubs_per_eco = 3;

    for p in 0..packages {
        let path = format!("pkgs/g{}/p{p}", p / 100);
        // Rust is the most common ecosystem; every other one is well represented.
        let eco = match rng.below(10) {
            0..=3 => Eco::Rust,
            4 => Eco::C,
            5 | 6 => Eco::Python,
            7 | 8 => Eco::Js,
            _ => Eco::Shell,
        };
        let pool = &libraries[eco.index()];
        // The first packages of an ecosystem are libraries (the hubs); after that, 35% of
        // the packages are leaves nothing depends on.
        let is_library = pool.len() < hubs_per_eco || !rng.chance(35);

        // Cross-package dependencies of the main target: a chain to the previous library,
        // a hub, and now and then a few random earlier libraries (fan-out).
        let mut upstream: BTreeSet<usize> = BTreeSet::new();
        if let Some(&last) = pool.last() {
            if rng.chance(70) {
                upstream.insert(last);
            }
            upstream.insert(pool[rng.below(pool.len().min(hubs_per_eco))]);
            if rng.chance(25) {
                for _ in 0..1 + rng.below(4) {
                    upstream.insert(pool[rng.below(pool.len())]);
                }
            }
        }
        // Rust libraries link a C hub now and then.
        let c_upstream =
            if eco == Eco::Rust && !libraries[Eco::C.index()].is_empty() && rng.chance(20) {
                let c_pool = &libraries[Eco::C.index()];
                Some(c_pool[rng.below(c_pool.len().min(hubs_per_eco))])
            } else {
                None
            };
        let upstream_refs: Vec<String> = upstream
            .iter()
            .map(|&u| format!("{}/Lib0", generated.package_paths[u]))
            .collect();
        let mut deps_of_package = upstream.clone();
        deps_of_package.extend(c_upstream);

        let (lib_kind, test_kind, bin_kind) = eco.kinds();
        let dir = root.join(&path);
        let mut manifest = format!(
            "# Package {p} ({eco:?}, {})\n\n",
            if is_library { "library" } else { "leaf" }
        );
        for k in 0..per_package {
            let role = if k == 0 {
                Role::Library
            } else if k % 4 == 3 {
                Role::Test
            } else if k == per_package - 1 && !is_library {
                Role::Binary
            } else {
                Role::Library
            };
            let (file, glob, body) = source_for(eco, role, k);
            let file_path = dir.join(&file);
            if let Some(parent) = file_path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&file_path, body)?;
            generated.source_files.push(format!("{path}/{file}"));

            let kind = match role {
                Role::Library => lib_kind,
                Role::Test => test_kind,
                Role::Binary => bin_kind,
            };
            let name = match role {
                Role::Library => format!("Lib{k}"),
                Role::Test => format!("Test{k}"),
                Role::Binary => format!("App{k}"),
            };
            let mut srcs = vec![glob];
            if eco == Eco::Rust {
                srcs.push("Cargo.toml".into());
            }
            let mut target = Target {
                name,
                kind,
                srcs,
                deps: Vec::new(),
                select_deps: None,
                roles: Vec::new(),
                visibility: None,
                labels: Vec::new(),
                attrs: Vec::new(),
            };

            // In-package edges: libraries chain to the main library; tests and binaries
            // use the previous library of the package when it is in a compatible role.
            let local_lib = (0..k)
                .rev()
                .find(|&j| j == 0 || (j % 4 != 3))
                .map(|j| format!("./Lib{j}"));
            match role {
                Role::Library if k == 0 => {
                    if upstream_refs.is_empty() {
                        // A root of the graph.
                    } else if p % 7 == 3 {
                        // A configuration-dependent edge set: the pinned configuration
                        // takes the `linux` branch.
                        target.select_deps = Some((upstream_refs.clone(), Vec::new()));
                    } else {
                        target.deps = upstream_refs.clone();
                    }
                    if let Some(c) = c_upstream {
                        target.roles.push((
                            "c_deps",
                            vec![format!("{}/Lib0", generated.package_paths[c])],
                        ));
                    }
                    let hub = pool.len() < hubs_per_eco;
                    target.visibility = Some(if hub {
                        vec!["public".into()]
                    } else {
                        vec!["subtree:pkgs".into()]
                    });
                    if hub {
                        target.labels.push("hub".into());
                    }
                }
                Role::Library => {
                    target.deps = vec![local_lib.clone().unwrap_or_else(|| "./Lib0".into())];
                    target.visibility = Some(vec!["private".into()]);
                }
                Role::Test => {
                    target.labels.push(format!("team:{}", p % 13));
                    match eco {
                        Eco::Rust => {
                            target.deps = vec!["./Lib0".into()];
                            target
                                .roles
                                .push(("crate_under_test", vec!["./Lib0".into()]));
                        }
                        Eco::Python | Eco::Js => target.deps = vec!["./Lib0".into()],
                        Eco::Shell => target.deps = vec!["./Lib0".into()],
                        Eco::C => {}
                    }
                }
                Role::Binary => {
                    if eco == Eco::Rust || eco == Eco::Shell {
                        target.deps = vec!["./Lib0".into()];
                    }
                }
            }
            // Configurable attributes, some of them through `select`.
            match (eco, role) {
                (Eco::Rust, Role::Library) if k == 0 => {
                    target.attrs.push(format!("crate_name = \"p{p}\""));
                    target.attrs.push(
                        "profile = { select = { release = \"release\", default = \"dev\" } }"
                            .into(),
                    );
                }
                (Eco::Rust, Role::Binary) => {
                    target.attrs.push(format!("crate_name = \"app{p}\""));
                    target.attrs.push(
                        "features = { select = { linux = [\"linux\"], default = [] } }".into(),
                    );
                }
                (Eco::C, Role::Library) if k == 0 => {
                    target.attrs.push(
                        "copts = { select = { release = [\"-O2\"], default = [\"-O0\", \"-g\"] } }"
                            .into(),
                    );
                }
                (Eco::Js, Role::Library | Role::Binary) => {
                    target.attrs.push(format!("package_name = \"p{p}-t{k}\""));
                }
                (Eco::Rust, Role::Test) => target.attrs.push("timeout_seconds = 120".into()),
                (_, Role::Test) => target.attrs.push("timeout_seconds = 60".into()),
                _ => {}
            }
            target.render(&mut manifest);
        }
        if eco == Eco::Rust {
            std::fs::write(
                dir.join("Cargo.toml"),
                format!("[package]\nname = \"p{p}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
            )?;
        }
        std::fs::write(dir.join("once.toml"), manifest)?;
        if is_library {
            libraries[eco.index()].push(p);
        }
        generated.package_paths.push(path);
        generated.package_deps.push(deps_of_package);
    }
    // The warm benchmarks edit a manifest in the middle of the graph.
    generated.edited_manifest = format!("{}/once.toml", generated.package_paths[packages / 2]);
    Ok(generated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_writes_the_same_workspace() {
        let base = std::env::temp_dir().join(format!("once-synth-test-{}", std::process::id()));
        let a = generate(&base.join("a"), 30, 6, 7).unwrap();
        let b = generate(&base.join("b"), 30, 6, 7).unwrap();
        assert_eq!(a.package_deps, b.package_deps);
        for path in &a.package_paths {
            let left = std::fs::read(base.join("a").join(path).join("once.toml")).unwrap();
            let right = std::fs::read(base.join("b").join(path).join("once.toml")).unwrap();
            assert_eq!(left, right);
        }
        let c = generate(&base.join("c"), 30, 6, 8).unwrap();
        assert_ne!(a.package_deps, c.package_deps);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
