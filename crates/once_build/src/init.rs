//! The facts `once init` plans from ([`once_analysis::init::EcosystemFacts`]): the
//! workspace walk and the ecosystem files it finds, read through the `System` and parsed
//! here (`package.json`, `pyproject.toml`, `setup.cfg`, and `setup.py` scanned for its
//! name, never run), and what the ecosystems' own tools report, run through `once_exec`
//! (`cargo metadata` for Cargo packages and workspaces, `go list -json ./...` for Go
//! modules). Directories that are workspaces of their own (a nested `once.toml` with
//! `[workspace]`, a Cargo workspace that is not a member of the one around it) are
//! recorded and left out of the walk before any ecosystem reads it. Nothing here writes:
//! the planner in `once_analysis` decides the manifests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use once_analysis::init::{
    CargoPackage, CargoTarget, EcosystemFacts, GoPackage, NodePackage, PythonProject, PythonRunner,
    ShellTests,
};
use once_db::System;
use serde_json::Value;

mod setup_py;

/// How long one ecosystem tool may run.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// The most output of one tool that is read.
const TOOL_OUTPUT_LIMIT: usize = 256 << 20;

/// Gathers the facts of the workspace at `root` (absolute).
pub fn gather(system: &dyn System, root: &Path) -> EcosystemFacts {
    let mut facts = EcosystemFacts::default();
    match system.walk(root) {
        Ok(files) => facts.files = files,
        Err(e) => {
            facts
                .warnings
                .push(format!("cannot walk `{}`: {e}", root.display()));
            return facts;
        }
    }
    let reader = Reader { system, root };
    once_workspaces(&reader, &mut facts);
    leave_out_nested(&mut facts);
    cargo(&reader, &mut facts);
    leave_out_nested(&mut facts);
    python(&reader, &mut facts);
    node(&reader, &mut facts);
    go(&reader, &mut facts);
    shell(&mut facts);
    facts
}

/// Whether `path` is `dir` or lies under it (`dir` `""` is the root, above everything).
fn within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Records the directories below the root whose `once.toml` has a `[workspace]` table:
/// workspaces of their own, which this one does not describe.
fn once_workspaces(reader: &Reader<'_>, facts: &mut EcosystemFacts) {
    for file in &facts.files {
        let dir = dir_of(file);
        if file_name(file) != "once.toml" || dir.is_empty() {
            continue;
        }
        if facts.nested_workspaces.iter().any(|n| within(dir, n)) {
            continue;
        }
        let Some(text) = reader.read(file) else {
            continue;
        };
        let declares = match text.parse::<toml::Table>() {
            Ok(table) => table.contains_key("workspace"),
            // A manifest that does not parse: its header line still says what it is.
            Err(_) => text.lines().any(|l| l.trim() == "[workspace]"),
        };
        if declares {
            facts.nested_workspaces.push(dir.to_owned());
        }
    }
}

/// Drops the files of the nested workspaces from the walk, so that no ecosystem reads
/// them.
fn leave_out_nested(facts: &mut EcosystemFacts) {
    facts.nested_workspaces.sort();
    facts.nested_workspaces.dedup();
    // One inside another is excluded with it (the walk may meet the inner one first).
    let all = facts.nested_workspaces.clone();
    facts
        .nested_workspaces
        .retain(|n| !all.iter().any(|outer| outer != n && within(n, outer)));
    if facts.nested_workspaces.is_empty() {
        return;
    }
    let nested = &facts.nested_workspaces;
    facts
        .files
        .retain(|f| !nested.iter().any(|n| within(dir_of(f), n)));
}

struct Reader<'a> {
    system: &'a dyn System,
    root: &'a Path,
}

impl Reader<'_> {
    fn read(&self, relative: &str) -> Option<String> {
        self.system.read_to_string(&self.root.join(relative)).ok()
    }

    /// `path` (absolute, or relative to `base`, a workspace-relative directory) as a
    /// workspace-relative path, when it is inside the workspace.
    fn relative(&self, base: &str, path: &str) -> Option<String> {
        let joined = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.root.join(base).join(path)
        };
        let mut parts: Vec<String> = Vec::new();
        let normal = normalize(&joined);
        let inside = normal.strip_prefix(self.root).ok()?;
        for component in inside.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_str()?.to_owned()),
                _ => return None,
            }
        }
        Some(parts.join("/"))
    }
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn dir_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn file_name(file: &str) -> &str {
    file.rsplit_once('/').map_or(file, |(_, name)| name)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn under<'a>(files: &'a [String], dir: &str) -> impl Iterator<Item = &'a str> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    files
        .iter()
        .filter_map(move |f| f.strip_prefix(prefix.as_str()))
}

/// Runs an ecosystem tool in `cwd`: its standard output, or why it failed.
fn run_tool(
    program: &str,
    args: &[&str],
    cwd: &Path,
    env: &[(&str, &str)],
) -> Result<Vec<u8>, String> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let mut stdout = once_exec::piped::Bounded::new(TOOL_OUTPUT_LIMIT);
    let mut stderr = once_exec::piped::Bounded::new(64 << 10);
    let line = format!("{program} {}", args.join(" "));
    let exit = once_exec::piped::run_program_in(
        program,
        &args,
        cwd,
        env,
        Some(TOOL_TIMEOUT),
        &mut |chunk| stdout.take(chunk),
        &mut |chunk| stderr.take(chunk),
    )
    .map_err(|e| format!("cannot run `{line}`: {e}"))?;
    if exit.timed_out {
        return Err(format!(
            "`{line}` took longer than {} s",
            TOOL_TIMEOUT.as_secs()
        ));
    }
    if !exit.status.success() {
        return Err(format!(
            "`{line}` failed ({}): {}",
            exit.status,
            String::from_utf8_lossy(&stderr.bytes).trim()
        ));
    }
    Ok(stdout.bytes)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn cargo(reader: &Reader<'_>, facts: &mut EcosystemFacts) {
    let mut manifests: Vec<&String> = facts
        .files
        .iter()
        .filter(|f| file_name(f) == "Cargo.toml")
        .collect();
    manifests.sort_by_key(|f| (f.matches('/').count(), (*f).clone()));
    let mut covered: BTreeSet<String> = BTreeSet::new();
    let mut packages = Vec::new();
    // The Cargo workspace roots seen, outermost first: one below another, of which it is
    // not a member, is a workspace of its own (`cargo-fuzz`'s `fuzz/`, a vendored tool).
    let mut cargo_roots: Vec<String> = Vec::new();
    let mut nested: Vec<String> = Vec::new();
    for manifest in manifests {
        if covered.contains(manifest.as_str()) || nested.iter().any(|n| within(dir_of(manifest), n))
        {
            continue;
        }
        let dir = reader.root.join(dir_of(manifest));
        let output = match run_tool(
            "cargo",
            &[
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ],
            &dir,
            &[],
        ) {
            Ok(output) => output,
            Err(e) => {
                facts.warnings.push(format!("{manifest}: {e}"));
                covered.insert(manifest.clone());
                continue;
            }
        };
        let Ok(metadata) = serde_json::from_slice::<Value>(&output) else {
            facts
                .warnings
                .push(format!("{manifest}: `cargo metadata` printed no JSON"));
            continue;
        };
        covered.insert(manifest.clone());
        let workspace_root = metadata["workspace_root"]
            .as_str()
            .and_then(|r| reader.relative("", r));
        if let Some(workspace_root) = workspace_root {
            let outer = cargo_roots
                .iter()
                .any(|r| *r != workspace_root && within(&workspace_root, r));
            if outer && !workspace_root.is_empty() {
                nested.push(workspace_root);
                continue;
            }
            if !cargo_roots.contains(&workspace_root) {
                cargo_roots.push(workspace_root);
            }
        }
        for package in metadata["packages"].as_array().into_iter().flatten() {
            let Some(manifest_path) = package["manifest_path"].as_str() else {
                continue;
            };
            let Some(relative) = reader.relative("", manifest_path) else {
                continue;
            };
            if !covered.insert(relative.clone()) && relative != *manifest {
                continue;
            }
            packages.push((relative, package.clone()));
        }
    }
    facts.nested_workspaces.extend(nested);
    for (manifest, package) in packages {
        let dir = dir_of(&manifest).to_owned();
        let mut out = CargoPackage {
            dir: dir.clone(),
            name: package["name"].as_str().unwrap_or("crate").to_owned(),
            edition: package["edition"].as_str().unwrap_or("2021").to_owned(),
            links: package["links"].as_str().map(str::to_owned),
            ..CargoPackage::default()
        };
        let mut integration_tests = false;
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds = strings(&target["kind"]);
            let name = target["name"].as_str().unwrap_or_default().to_owned();
            if kinds.iter().any(|k| {
                matches!(
                    k.as_str(),
                    "lib" | "rlib" | "dylib" | "proc-macro" | "staticlib" | "cdylib"
                )
            }) {
                out.lib = Some(name.replace('-', "_"));
            } else if kinds.iter().any(|k| k == "bin") {
                out.bins.push(cargo_target(reader, &dir, target, name));
            } else if kinds.iter().any(|k| k == "example") {
                out.examples.push(cargo_target(reader, &dir, target, name));
            } else if kinds.iter().any(|k| k == "bench") {
                out.benches.push(name);
            } else if kinds.iter().any(|k| k == "test") {
                integration_tests = true;
            } else if kinds.iter().any(|k| k == "custom-build") {
                out.build_script = Some(
                    target_path(reader, &dir, target).unwrap_or_else(|| "build.rs".to_owned()),
                );
            }
        }
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let Some(path) = dependency["path"].as_str() else {
                continue;
            };
            let Some(relative) = reader.relative("", path) else {
                continue;
            };
            if dependency["kind"].as_str() == Some("dev") {
                out.dev_path_deps.push(relative);
            } else {
                out.path_deps.push(relative);
            }
        }
        // `cargo test` runs the unit tests of every crate and the library's examples.
        let sources: Vec<String> = under(&facts.files, &join(&dir, "src"))
            .filter(|f| f.ends_with(".rs"))
            .map(|f| join(&join(&dir, "src"), f))
            .collect();
        let has_code_tests = sources.iter().any(|f| {
            reader.read(f).is_some_and(|text| {
                text.contains("#[test]") || (out.lib.is_some() && text.contains("```"))
            })
        });
        out.has_tests = integration_tests || has_code_tests;
        facts.cargo.push(out);
    }
    facts.cargo.sort_by(|a, b| a.dir.cmp(&b.dir));
}

/// A Cargo target's root source file, relative to its package directory `dir`.
fn target_path(reader: &Reader<'_>, dir: &str, target: &Value) -> Option<String> {
    let path = reader.relative("", target["src_path"].as_str()?)?;
    if dir.is_empty() {
        Some(path)
    } else {
        path.strip_prefix(&format!("{dir}/")).map(str::to_owned)
    }
}

/// A binary or example target of `cargo metadata`.
fn cargo_target(reader: &Reader<'_>, dir: &str, target: &Value, name: String) -> CargoTarget {
    CargoTarget {
        path: target_path(reader, dir, target).unwrap_or_default(),
        required_features: strings(&target["required-features"]),
        name,
    }
}

/// Whether a pyproject table mentions pytest among the project's dependencies.
fn mentions_pytest(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        (line.starts_with('"') || line.starts_with('\'') || line.starts_with("pytest"))
            && line
                .trim_matches(|c| c == '"' || c == '\'' || c == ',')
                .starts_with("pytest")
    })
}

fn python(reader: &Reader<'_>, facts: &mut EcosystemFacts) {
    let mut projects: BTreeMap<String, String> = BTreeMap::new();
    for file in &facts.files {
        let name = file_name(file);
        if matches!(name, "pyproject.toml" | "setup.cfg" | "setup.py") {
            let dir = dir_of(file).to_owned();
            let rank = |n: &str| match n {
                "pyproject.toml" => 0,
                "setup.cfg" => 1,
                _ => 2,
            };
            let better = projects
                .get(&dir)
                .is_none_or(|known| rank(name) < rank(file_name(known)));
            if better {
                projects.insert(dir, file.clone());
            }
        }
    }
    for (dir, config_file) in projects {
        let files: Vec<&str> = under(&facts.files, &dir).collect();
        let has = |f: &str| files.contains(&f);
        let pyproject = if has("pyproject.toml") {
            reader
                .read(&join(&dir, "pyproject.toml"))
                .and_then(|t| t.parse::<toml::Table>().ok().map(|table| (t, table)))
        } else {
            None
        };
        let setup_cfg = if has("setup.cfg") {
            reader.read(&join(&dir, "setup.cfg"))
        } else {
            None
        };
        let ini_section = |text: &Option<String>, section: &str| {
            text.as_deref()
                .is_some_and(|t| t.lines().any(|l| l.trim() == format!("[{section}]")))
        };
        let cfg_name = setup_cfg.as_deref().and_then(|text| {
            let mut in_metadata = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with('[') {
                    in_metadata = line == "[metadata]";
                } else if in_metadata
                    && let Some((key, value)) = line.split_once('=')
                    && key.trim() == "name"
                {
                    return Some(value.trim().to_owned());
                }
            }
            None
        });
        let name = pyproject
            .as_ref()
            .and_then(|(_, t)| t.get("project")?.get("name")?.as_str().map(str::to_owned))
            .or(cfg_name)
            .or_else(|| {
                if !has("setup.py") {
                    return None;
                }
                let text = reader.read(&join(&dir, "setup.py"))?;
                match setup_py::setup_name(&text) {
                    setup_py::SetupName::Literal(name) if !name.trim().is_empty() => {
                        Some(name.trim().to_owned())
                    }
                    setup_py::SetupName::NotLiteral(expression) => {
                        facts.warnings.push(format!(
                            "{}: the name passed to `setup()` is not a string literal (`{expression}`), and `setup.py` is not run: the project is named after its directory",
                            join(&dir, "setup.py")
                        ));
                        None
                    }
                    _ => None,
                }
            })
            .unwrap_or_else(|| {
                let segment = file_name(&dir);
                if segment.is_empty() {
                    "project"
                } else {
                    segment
                }
                .to_owned()
            });
        let src_layout = files.iter().any(|f| {
            f.starts_with("src/") && f.ends_with("/__init__.py") && f.matches('/').count() == 2
        });
        let import_root = if src_layout { "src" } else { "." };
        let prefix = if src_layout { "src/" } else { "" };
        let not_code = [
            "tests",
            "test",
            "docs",
            "doc",
            "examples",
            "example",
            "build",
            "dist",
            "scripts",
            "benchmarks",
        ];
        let mut packages = BTreeSet::new();
        let mut modules = BTreeSet::new();
        for f in &files {
            let Some(rest) = f.strip_prefix(prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((top, "__init__.py")) if !not_code.contains(&top) => {
                    packages.insert(format!("{prefix}{top}"));
                }
                None if rest.ends_with(".py")
                    && !matches!(rest, "setup.py" | "conftest.py" | "noxfile.py" | "tasks.py") =>
                {
                    modules.insert(format!("{prefix}{rest}"));
                }
                _ => {}
            }
        }
        let tests = ["tests", "test"]
            .into_iter()
            .find(|t| {
                files
                    .iter()
                    .any(|f| f.starts_with(&format!("{t}/")) && f.ends_with(".py"))
            })
            .map(str::to_owned);
        let tests_package = tests
            .as_ref()
            .is_some_and(|t| has(&format!("{t}/__init__.py")));
        let pyproject_configures_pytest = pyproject.as_ref().is_some_and(|(_, t)| {
            t.get("tool")
                .and_then(|tool| tool.get("pytest"))
                .and_then(|p| p.get("ini_options"))
                .is_some()
        });
        let mut pytest_files = Vec::new();
        if pyproject_configures_pytest {
            pytest_files.push("pyproject.toml".to_owned());
        }
        for f in ["pytest.ini", "conftest.py"] {
            if has(f) {
                pytest_files.push(f.to_owned());
            }
        }
        if ini_section(&setup_cfg, "tool:pytest") {
            pytest_files.push("setup.cfg".to_owned());
        }
        let tox = has("tox.ini")
            .then(|| reader.read(&join(&dir, "tox.ini")))
            .flatten();
        if ini_section(&tox, "pytest") {
            pytest_files.push("tox.ini".to_owned());
        }
        let test_texts: Vec<String> = tests
            .as_ref()
            .map(|t| {
                files
                    .iter()
                    .filter(|f| f.starts_with(&format!("{t}/")) && f.ends_with(".py"))
                    .filter_map(|f| reader.read(&join(&dir, f)))
                    .collect()
            })
            .unwrap_or_default();
        let uses = |needle: &[&str]| {
            test_texts.iter().any(|text| {
                text.lines()
                    .any(|l| needle.iter().any(|n| l.trim_start().starts_with(n)))
            })
        };
        let conftest_in_tests = tests
            .as_ref()
            .is_some_and(|t| has(&format!("{t}/conftest.py")));
        let runner = if !pytest_files.is_empty()
            || conftest_in_tests
            || uses(&["import pytest", "from pytest"])
            || pyproject
                .as_ref()
                .is_some_and(|(text, _)| mentions_pytest(text))
        {
            PythonRunner::Pytest
        } else if uses(&["import unittest", "from unittest"]) {
            PythonRunner::Unittest
        } else {
            PythonRunner::Pytest
        };
        let mut path_deps = Vec::new();
        if let Some((_, table)) = &pyproject {
            let tool = table.get("tool");
            let sources = [
                tool.and_then(|t| t.get("uv"))
                    .and_then(|u| u.get("sources")),
                tool.and_then(|t| t.get("poetry"))
                    .and_then(|p| p.get("dependencies")),
                tool.and_then(|t| t.get("poetry"))
                    .and_then(|p| p.get("group"))
                    .and_then(|g| g.get("dev"))
                    .and_then(|d| d.get("dependencies")),
            ];
            for table in sources.into_iter().flatten().filter_map(|v| v.as_table()) {
                for value in table.values() {
                    if let Some(path) = value.get("path").and_then(|p| p.as_str())
                        && let Some(relative) = reader.relative(&dir, path)
                    {
                        path_deps.push(relative);
                    }
                }
            }
            let requirements = table
                .get("project")
                .and_then(|p| p.get("dependencies"))
                .and_then(|d| d.as_array())
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str());
            for requirement in requirements {
                if let Some((_, url)) = requirement.split_once('@') {
                    let url = url.trim();
                    let path = url
                        .strip_prefix("file://")
                        .or_else(|| url.strip_prefix("file:"));
                    if let Some(path) = path
                        && let Some(relative) = reader.relative(&dir, path)
                    {
                        path_deps.push(relative);
                    }
                }
            }
        }
        facts.python.push(PythonProject {
            dir,
            config_file,
            name,
            import_root: import_root.to_owned(),
            packages: packages.into_iter().collect(),
            modules: modules.into_iter().collect(),
            tests,
            runner,
            tests_package,
            pytest_files,
            path_deps,
        });
    }
}

fn node(reader: &Reader<'_>, facts: &mut EcosystemFacts) {
    let manifests: Vec<String> = facts
        .files
        .iter()
        .filter(|f| file_name(f) == "package.json")
        .cloned()
        .collect();
    for manifest in manifests {
        let Some(text) = reader.read(&manifest) else {
            facts.warnings.push(format!("{manifest}: cannot be read"));
            continue;
        };
        let Ok(json) = serde_json::from_str::<Value>(&text) else {
            facts.warnings.push(format!("{manifest}: not JSON"));
            continue;
        };
        let names = |key: &str| -> Vec<String> {
            json[key]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        let test_script = json["scripts"]["test"].as_str().map(str::to_owned);
        let node_test = test_script.as_deref().is_some_and(|s| {
            s.split("&&").any(|part| {
                let words: Vec<&str> = part.split_whitespace().collect();
                words.first() == Some(&"node") && words.contains(&"--test")
            })
        });
        let mut dependencies = names("dependencies");
        dependencies.extend(names("peerDependencies"));
        dependencies.extend(names("optionalDependencies"));
        let name = json["name"].as_str().unwrap_or_default().to_owned();
        let dir = dir_of(&manifest).to_owned();
        // `bin`: one file named after the package (its name without the scope), or a
        // map of command names to files.
        let mut bins: Vec<(String, String)> = match &json["bin"] {
            Value::String(path) => {
                let command = name.rsplit('/').next().unwrap_or_default();
                vec![(command.to_owned(), path.clone())]
            }
            Value::Object(map) => map
                .iter()
                .filter_map(|(command, path)| Some((command.clone(), path.as_str()?.to_owned())))
                .collect(),
            _ => Vec::new(),
        };
        bins.retain_mut(|(command, path)| {
            let inside = reader.relative(&dir, path).and_then(|relative| {
                if dir.is_empty() {
                    Some(relative)
                } else {
                    relative
                        .strip_prefix(&format!("{dir}/"))
                        .map(str::to_owned)
                }
            });
            match inside {
                Some(inside) => {
                    *path = inside;
                    true
                }
                None => {
                    facts.warnings.push(format!(
                        "{manifest}: the `bin` entry `{command}` (`{path}`) is outside the package's directory: no target describes it"
                    ));
                    false
                }
            }
        });
        facts.node.push(NodePackage {
            dir,
            name,
            bins,
            node_test,
            test_script,
            dependencies,
            dev_dependencies: names("devDependencies"),
        });
    }
}

fn go(reader: &Reader<'_>, facts: &mut EcosystemFacts) {
    let modules: Vec<String> = facts
        .files
        .iter()
        .filter(|f| file_name(f) == "go.mod")
        .cloned()
        .collect();
    for go_mod in modules {
        let dir = reader.root.join(dir_of(&go_mod));
        // Offline, in module mode, ignoring any go.work: what the module says by itself.
        let output = match run_tool(
            "go",
            &["list", "-e", "-json", "./..."],
            &dir,
            &[
                ("GOFLAGS", "-mod=mod"),
                ("GOPROXY", "off"),
                ("GOWORK", "off"),
            ],
        ) {
            Ok(output) => output,
            Err(e) => {
                facts.warnings.push(format!("{go_mod}: {e}"));
                continue;
            }
        };
        for package in serde_json::Deserializer::from_slice(&output).into_iter::<Value>() {
            let Ok(package) = package else {
                facts.warnings.push(format!(
                    "{go_mod}: `go list` printed something that is not JSON"
                ));
                break;
            };
            if let Some(error) = package["Error"]["Err"].as_str() {
                facts.warnings.push(format!("{go_mod}: {error}"));
                continue;
            }
            let Some(package_dir) = package["Dir"].as_str().and_then(|d| reader.relative("", d))
            else {
                continue;
            };
            let both = |a: &str, b: &str| {
                let mut all = strings(&package[a]);
                all.extend(strings(&package[b]));
                all.sort();
                all.dedup();
                all
            };
            facts.go.push(GoPackage {
                dir: package_dir,
                go_mod: go_mod.clone(),
                import_path: package["ImportPath"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                name: package["Name"].as_str().unwrap_or_default().to_owned(),
                go_files: both("GoFiles", "CgoFiles"),
                test_files: both("TestGoFiles", "XTestGoFiles"),
                imports: strings(&package["Imports"]),
                test_imports: both("TestImports", "XTestImports"),
            });
        }
    }
    facts.go.sort_by(|a, b| a.dir.cmp(&b.dir));
}

fn shell(facts: &mut EcosystemFacts) {
    let described: BTreeSet<&str> = facts
        .cargo
        .iter()
        .map(|p| p.dir.as_str())
        .chain(facts.python.iter().map(|p| p.dir.as_str()))
        .chain(facts.node.iter().map(|p| p.dir.as_str()))
        .chain(facts.go.iter().map(|p| p.dir.as_str()))
        .collect();
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in &facts.files {
        let dir = dir_of(file);
        let (parent, last) = dir.rsplit_once('/').unwrap_or(("", dir));
        if last == "tests" && file.ends_with(".sh") && !described.contains(parent) {
            found
                .entry(parent.to_owned())
                .or_default()
                .push(format!("tests/{}", file_name(file)));
        }
    }
    facts.shell = found
        .into_iter()
        .map(|(dir, scripts)| ShellTests { dir, scripts })
        .collect();
}
