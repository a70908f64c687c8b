//! What a repository's own ecosystem files say, as plain data: the input of `once init`.
//!
//! The execution layer (`once_build::init`) fills these in from the workspace walk, the
//! files it reads (`package.json`, `pyproject.toml`, …) and the tools it runs (`cargo
//! metadata`, `go list`); the planner ([`super::plan_init`]) turns them into manifests.
//! Every path is workspace-relative with `/` separators; `""` is the workspace root.

/// Everything `once init` learned about the repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EcosystemFacts {
    /// Every file of the workspace walk (hidden, ignored, `target/` and `node_modules/`
    /// entries left out), sorted.
    pub files: Vec<String>,
    pub cargo: Vec<CargoPackage>,
    pub python: Vec<PythonProject>,
    pub node: Vec<NodePackage>,
    pub go: Vec<GoPackage>,
    /// Directories whose `tests/` holds shell test scripts and nothing of another
    /// ecosystem: each script becomes an `sh_test`.
    pub shell: Vec<ShellTests>,
    /// Directories that are workspaces of their own inside this one (a `once.toml` with
    /// `[workspace]`, or a Cargo workspace that is not a member of the one around it):
    /// nothing under them is described, and the root manifest excludes them.
    pub nested_workspaces: Vec<String>,
    /// What could not be read or run, and what was seen but is not described.
    pub warnings: Vec<String>,
}

/// A Cargo package, as `cargo metadata` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CargoPackage {
    /// The directory of its `Cargo.toml`.
    pub dir: String,
    pub name: String,
    /// `2015`, `2018`, `2021` or `2024`.
    pub edition: String,
    /// The crate name of its library target, when it has one.
    pub lib: Option<String>,
    /// Its binary targets.
    pub bins: Vec<CargoTarget>,
    /// Its example targets (`[[example]]`, `examples/*.rs`).
    pub examples: Vec<CargoTarget>,
    /// Its benchmark targets' names (`[[bench]]`, `benches/*.rs`).
    pub benches: Vec<String>,
    /// Whether `cargo test` finds tests: integration test targets, or `#[test]` functions
    /// or documentation examples in its sources.
    pub has_tests: bool,
    /// Its build script, relative to `dir` (`build.rs`, or the `build` key's path).
    pub build_script: Option<String>,
    /// Its `links` value.
    pub links: Option<String>,
    /// The directories of the path dependencies it declares (normal and build).
    pub path_deps: Vec<String>,
    /// The directories of its path dev-dependencies (its tests use them).
    pub dev_path_deps: Vec<String>,
}

/// A binary or example target of a Cargo package.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CargoTarget {
    pub name: String,
    /// Its root source file, relative to the package directory (`examples/demo.rs`).
    pub path: String,
    /// Its `required-features`.
    pub required_features: Vec<String>,
}

/// Which runner a Python project's tests are written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PythonRunner {
    Pytest,
    Unittest,
}

/// A Python project: a directory with `pyproject.toml`, `setup.cfg` or `setup.py`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonProject {
    pub dir: String,
    /// The file it was found by, workspace-relative.
    pub config_file: String,
    /// The project's name (`[project] name`, `[metadata] name`, the string literal of
    /// `setup(name=…)` in `setup.py`), else the directory's.
    pub name: String,
    /// `src` for a src layout, `.` for a flat one.
    pub import_root: String,
    /// Its top-level import packages (directories with `__init__.py` under the import
    /// root), relative to the project.
    pub packages: Vec<String>,
    /// Its top-level modules (`name.py` under the import root, other than `setup.py` and
    /// `conftest.py`), relative to the project.
    pub modules: Vec<String>,
    /// The test directory (`tests` or `test`), relative to the project.
    pub tests: Option<String>,
    pub runner: PythonRunner,
    /// Whether the test directory has an `__init__.py`.
    pub tests_package: bool,
    /// Files pytest reads its configuration and fixtures from, relative to the project
    /// (`pyproject.toml` with `[tool.pytest.ini_options]`, `pytest.ini`, `conftest.py`).
    pub pytest_files: Vec<String>,
    /// Directories of the local path dependencies it declares.
    pub path_deps: Vec<String>,
}

/// A Node.js package: a directory with `package.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodePackage {
    pub dir: String,
    /// Its `name` field (may be empty).
    pub name: String,
    /// Whether its `test` script runs Node's own test runner (`node --test`).
    pub node_test: bool,
    /// Its `test` script, when it has one.
    pub test_script: Option<String>,
    /// Names in `dependencies`, `peerDependencies` and `optionalDependencies`.
    pub dependencies: Vec<String>,
    /// Names in `devDependencies`.
    pub dev_dependencies: Vec<String>,
    /// Its `bin` field: (command name, entry file relative to `dir`). A string `bin`
    /// names the command after the package.
    pub bins: Vec<(String, String)>,
}

/// A Go package, as `go list -json ./...` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GoPackage {
    pub dir: String,
    /// Its module's `go.mod`, workspace-relative.
    pub go_mod: String,
    pub import_path: String,
    /// The package clause (`main` for a command).
    pub name: String,
    /// `GoFiles` and `CgoFiles`: the file names compiled into the package.
    pub go_files: Vec<String>,
    /// `TestGoFiles` and `XTestGoFiles`.
    pub test_files: Vec<String>,
    pub imports: Vec<String>,
    /// `TestImports` and `XTestImports`.
    pub test_imports: Vec<String>,
}

/// Shell test scripts: `<dir>/tests/*.sh`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellTests {
    pub dir: String,
    /// The scripts, relative to `dir` (`tests/smoke.sh`).
    pub scripts: Vec<String>,
}
