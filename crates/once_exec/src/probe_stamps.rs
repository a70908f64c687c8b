//! The stamps of a toolchain probe: the files whose identity decides its answer, so that
//! an answer stored by an earlier process can be reused while none of them changed.
//!
//! Only probes of a known shape have stamps ([`probe_stamps`] returns `None` for the
//! rest, which run every time): `PROGRAM -vV`, `PROGRAM -V`, `PROGRAM --version`,
//! `go env VAR…` and `python3 -c` with the interpreter-identity script of the Python
//! rules. Their answer is decided by the program they start and the files that program
//! (or the proxy in front of it) reads to choose a toolchain:
//!
//! - always: the program as found on the probe's `PATH`, each link of its symbolic-link
//!   chain and the file at its end;
//! - a `rustup` proxy (the file at the end is `rustup`): `settings.toml` and the
//!   `toolchains` directory under `RUSTUP_HOME` (else `$HOME/.rustup`), each toolchain's
//!   copy of the program and its channel manifest, and every `rust-toolchain` and
//!   `rust-toolchain.toml` from the working directory up to `/`;
//! - a `pyenv` shim (a script that runs `libexec/pyenv exec`): `pyenv` itself, the
//!   global `version` file, every `.python-version` from the working directory up, the
//!   `versions` directory and each version's copy of the program and site directories
//!   (below), the hook directories, and the program on each `PATH` entry (the `system`
//!   version);
//! - `go`: its `GOROOT`'s `go.env` and `VERSION`, and every `go.mod` and `go.work` from
//!   the working directory up (they may name another toolchain);
//! - a Python interpreter: a `pyvenv.cfg` beside it or one directory up, and the site
//!   directories (`lib*/python*/site-packages` and `dist-packages`, present or absent) of
//!   the virtual environment that file marks and of the installation the interpreter
//!   belongs to (the directory above the `bin` it is in, at the end of its link chain;
//!   with `/usr/local` for `/usr`): the probe lists what is installed in them, and an
//!   installed, removed or upgraded distribution changes its site directory's stamp.
//!
//! A missing file is a stamp too (its appearing changes the answer). Any other script,
//! and a program that is a known dispatcher to something else (`ccache`, `sccache`,
//! `distcc`, `volta`, `asdf`, `mise`, `busybox`, …, anywhere on the link chain), has no
//! stamps: when in doubt, the
//! probe runs. The probe's argv, environment and working directory are part of the
//! stored answer's own key ([`crate::probes`]).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::tools::{Fingerprint, resolve_program};

/// The script of the Python rules' probe (`python3 -c …`, `prelude/python.star`): the
/// interpreter's version and path, then each site directory with the names in it and each
/// distribution's `RECORD` digest (what is installed).
pub const PYTHON_IDENTITY_SCRIPT: &str = r#"import hashlib, os, site, sys
print(sys.version)
print(sys.executable)
for d in site.getsitepackages():
    print(d)
    for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        r = os.path.join(d, n, "RECORD")
        if n != "__pycache__":
            print(" " + n, hashlib.sha256(open(r, "rb").read()).hexdigest() if os.path.isfile(r) else "")
"#;

/// The longest symbolic-link chain followed; a longer one has no stamps.
const MAX_LINKS: usize = 40;

/// Programs that run something else chosen by their own configuration.
const DISPATCHERS: &[&str] = &[
    "ccache",
    "sccache",
    "distcc",
    "icecc",
    "buildcache",
    "volta",
    "volta-shim",
    "asdf",
    "mise",
    "rtx",
    "proto",
    "busybox",
    "env",
];

/// One file whose identity decides a probe's answer, and what it was (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub path: String,
    pub state: Option<Fingerprint>,
}

impl Stamp {
    /// Whether the file changed in the last [`crate::tools::SETTLED`] (a change within
    /// one timestamp tick would not show): its answer is then not stored.
    pub fn is_settled(&self, now: std::time::SystemTime) -> bool {
        let Some(state) = self.state else {
            return true;
        };
        let now_ns = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        let settled_ns = i128::try_from(crate::tools::SETTLED.as_nanos()).unwrap_or(i128::MAX);
        now_ns - state.modified_ns > settled_ns
    }
}

/// The stamps of `probe` run with `environment` from `cwd`, or `None` when its answer
/// is not known to be decided by files (it then runs every time).
pub fn probe_stamps(
    probe: &[String],
    environment: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
) -> Option<Vec<Stamp>> {
    probe_stamps_with(probe, environment, cwd, &resolve_program)
}

/// [`probe_stamps`], finding the program with `resolve` (called like
/// [`resolve_program`]; an execution passes one that remembers what it found).
pub fn probe_stamps_with(
    probe: &[String],
    environment: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
    resolve: &dyn Fn(&str, &str, &Path) -> Result<std::path::PathBuf, String>,
) -> Option<Vec<Stamp>> {
    let (program, arguments) = probe.split_first()?;
    let name = file_name(Path::new(program))?;
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let python = name.starts_with("python") || name.starts_with("pypy");
    let shape_known = match arguments.as_slice() {
        ["-vV" | "-V" | "--version"] => true,
        ["env", variables @ ..] => {
            name == "go"
                && !variables.is_empty()
                && variables.iter().all(|v| {
                    !v.is_empty()
                        && v.bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                })
        }
        ["-c", script] => python && *script == PYTHON_IDENTITY_SCRIPT,
        _ => false,
    };
    if !shape_known {
        return None;
    }
    let path_variable = environment.get("PATH").map_or("", String::as_str);
    let found = resolve(program, path_variable, cwd).ok()?;
    let mut stamps = Vec::new();
    let target = chain(&found, &mut stamps)?;
    let target_name = file_name(&target)?;
    let dispatched = stamps.iter().any(|stamp| {
        file_name(Path::new(&stamp.path)).is_some_and(|n| DISPATCHERS.contains(&n.as_str()))
    });
    if dispatched {
        return None;
    }
    let start = first_bytes(&target)?;
    if start.starts_with(b"#!") {
        let pyenv_root = pyenv_shim_root(&target, environment)?;
        pyenv_stamps(&pyenv_root, &name, environment, cwd, &mut stamps)?;
        return Some(stamps);
    }
    if !is_native_executable(&start) {
        return None;
    }
    if target_name == "rustup" || target_name == "rustup-init" {
        rustup_stamps(&name, environment, cwd, &mut stamps)?;
    } else if name == "go" {
        let root = target.parent()?.parent()?;
        chain(&root.join("go.env"), &mut stamps)?;
        chain(&root.join("VERSION"), &mut stamps)?;
        upwards(cwd, &["go.mod", "go.work"], &mut stamps)?;
    } else if python {
        let mut environment = None;
        for directory in found.ancestors().skip(1).take(2) {
            let config = directory.join("pyvenv.cfg");
            chain(&config, &mut stamps)?;
            if environment.is_none() && config.is_file() {
                environment = Some(directory.to_path_buf());
            }
        }
        // The site directories of the virtual environment and of the installation the
        // interpreter belongs to (a virtual environment may see the latter's).
        let installation = target.parent()?.parent()?.to_path_buf();
        for prefix in environment.into_iter().chain([installation]) {
            site_stamps(&prefix, &mut stamps)?;
        }
    }
    Some(stamps)
}

/// Stamps the site directories below the installation `prefix`: `site-packages` and
/// `dist-packages` (Debian's) of each `lib*/python*` directory, present or absent; for
/// `/usr`, also those below `/usr/local` (Debian's interpreter reads them). Installing,
/// removing or upgrading a distribution adds or removes an entry of its site directory,
/// which changes that directory's stamp.
fn site_stamps(prefix: &Path, stamps: &mut Vec<Stamp>) -> Option<()> {
    let mut prefixes = vec![prefix.to_path_buf()];
    if prefix == Path::new("/usr") {
        prefixes.push(PathBuf::from("/usr/local"));
    }
    for prefix in prefixes {
        for lib in ["lib", "lib64"] {
            let lib = prefix.join(lib);
            for name in sorted_names(&lib)? {
                if !name.starts_with("python") && !name.starts_with("pypy") {
                    continue;
                }
                for site in ["site-packages", "dist-packages"] {
                    chain(&lib.join(&name).join(site), stamps)?;
                }
            }
        }
    }
    Some(())
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name()?.to_str().map(str::to_owned)
}

/// Stamps each link of the symbolic-link chain at `path` and the file at its end (or
/// its absence); returns the path at the end.
fn chain(path: &Path, stamps: &mut Vec<Stamp>) -> Option<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let text = current.to_str()?.to_owned();
        if text.contains('\n') {
            return None;
        }
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) => {
                stamps.push(Stamp {
                    path: text,
                    state: Some(Fingerprint::of(&metadata)),
                });
                if !metadata.file_type().is_symlink() {
                    return Some(current);
                }
                let link = std::fs::read_link(&current).ok()?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                stamps.push(Stamp {
                    path: text,
                    state: None,
                });
                return Some(current);
            }
            Err(_) => return None,
        }
    }
    None
}

/// Stamps each of `names` in `cwd` and every directory above it.
fn upwards(cwd: &Path, names: &[&str], stamps: &mut Vec<Stamp>) -> Option<()> {
    for directory in cwd.ancestors() {
        for name in names {
            chain(&directory.join(name), stamps)?;
        }
    }
    Some(())
}

fn first_bytes(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .ok()?
        .take(4096)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

fn is_native_executable(start: &[u8]) -> bool {
    const MAGICS: &[&[u8]] = &[
        b"\x7fELF",
        &[0xcf, 0xfa, 0xed, 0xfe],
        &[0xce, 0xfa, 0xed, 0xfe],
        &[0xca, 0xfe, 0xba, 0xbe],
    ];
    MAGICS.iter().any(|magic| start.starts_with(magic))
}

fn home(environment: &std::collections::BTreeMap<String, String>) -> Option<PathBuf> {
    environment
        .get("HOME")
        .filter(|home| home.starts_with('/'))
        .map(PathBuf::from)
}

fn rustup_stamps(
    program: &str,
    environment: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
    stamps: &mut Vec<Stamp>,
) -> Option<()> {
    let rustup_home = match environment.get("RUSTUP_HOME") {
        Some(home) if home.starts_with('/') => PathBuf::from(home),
        Some(_) => return None,
        None => home(environment)?.join(".rustup"),
    };
    chain(&rustup_home.join("settings.toml"), stamps)?;
    let toolchains = rustup_home.join("toolchains");
    chain(&toolchains, stamps)?;
    for name in sorted_names(&toolchains)? {
        let toolchain = toolchains.join(name);
        chain(&toolchain.join("bin").join(program), stamps)?;
        chain(
            &toolchain.join("lib/rustlib/multirust-channel-manifest.toml"),
            stamps,
        )?;
    }
    upwards(cwd, &["rust-toolchain", "rust-toolchain.toml"], stamps)
}

/// The `PYENV_ROOT` of a pyenv shim at `script`, or `None` when it is not one.
fn pyenv_shim_root(
    script: &Path,
    environment: &std::collections::BTreeMap<String, String>,
) -> Option<PathBuf> {
    let text = std::fs::read_to_string(script).ok()?;
    if text.len() > 4096 || !text.contains("/libexec/pyenv\" exec") {
        return None;
    }
    let exported = text.lines().find_map(|line| {
        line.trim()
            .strip_prefix("export PYENV_ROOT=\"")
            .and_then(|rest| rest.strip_suffix('"'))
            .map(PathBuf::from)
    });
    match exported {
        Some(root) if root.is_absolute() => Some(root),
        Some(_) => None,
        None => match environment.get("PYENV_ROOT") {
            Some(root) if root.starts_with('/') => Some(PathBuf::from(root)),
            Some(_) => None,
            None => Some(home(environment)?.join(".pyenv")),
        },
    }
}

fn pyenv_stamps(
    root: &Path,
    program: &str,
    environment: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
    stamps: &mut Vec<Stamp>,
) -> Option<()> {
    chain(&root.join("libexec/pyenv"), stamps)?;
    chain(&root.join("version"), stamps)?;
    upwards(cwd, &[".python-version"], stamps)?;
    for hooks in [
        root.join("plugins"),
        root.join("pyenv.d"),
        PathBuf::from("/etc/pyenv.d"),
        PathBuf::from("/usr/local/etc/pyenv.d"),
        PathBuf::from("/usr/lib/pyenv/hooks"),
    ] {
        chain(&hooks, stamps)?;
    }
    let versions = root.join("versions");
    chain(&versions, stamps)?;
    for name in sorted_names(&versions)? {
        chain(&versions.join(&name).join("bin").join(program), stamps)?;
        site_stamps(&versions.join(name), stamps)?;
    }
    let path_variable = environment.get("PATH").map_or("", String::as_str);
    for directory in path_variable.split(':').filter(|d| d.starts_with('/')) {
        chain(&Path::new(directory).join(program), stamps)?;
    }
    Some(())
}

/// The names in `directory`, sorted (none when it does not exist); `None` when it cannot
/// be read or a name is not UTF-8, so the probe is not reused.
fn sorted_names(directory: &Path) -> Option<Vec<String>> {
    let mut names: Vec<String> = match std::fs::read_dir(directory) {
        Ok(entries) => entries
            .map(|entry| entry.ok().and_then(|e| e.file_name().into_string().ok()))
            .collect::<Option<_>>()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(_) => return None,
    };
    names.sort();
    Some(names)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn environment(path: &str, home: &Path) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("PATH".to_owned(), path.to_owned()),
            ("HOME".to_owned(), home.to_string_lossy().into_owned()),
        ])
    }

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn native_program(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"\x7fELF fake").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn paths(stamps: &[Stamp]) -> Vec<String> {
        stamps.iter().map(|s| s.path.clone()).collect()
    }

    #[test]
    fn only_probes_of_a_known_shape_on_a_native_program_have_stamps() {
        let home = tempfile::tempdir().unwrap();
        let bin = home.path().join("bin");
        native_program(&bin.join("node"));
        std::fs::write(bin.join("tool"), "#!/bin/sh\necho 1\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = environment(bin.to_str().unwrap(), home.path());
        let cwd = home.path();
        let stamps = probe_stamps(&argv(&["node", "--version"]), &env, cwd).unwrap();
        assert_eq!(paths(&stamps), vec![bin.join("node").to_string_lossy()]);
        assert!(stamps[0].state.is_some());
        for unknown in [
            argv(&["node", "-e", "console.log(1)"]),
            argv(&["node", "--version", "--extra"]),
            argv(&["tool", "--version"]),
            argv(&["missing", "--version"]),
            argv(&["python3", "-c", "import os; print(os.environ)"]),
            argv(&["node", "env", "GOROOT"]),
        ] {
            assert_eq!(probe_stamps(&unknown, &env, cwd), None, "{unknown:?}");
        }
        std::os::unix::fs::symlink(bin.join("node"), bin.join("ccache")).unwrap();
        std::os::unix::fs::symlink("ccache", bin.join("cc")).unwrap();
        assert_eq!(
            probe_stamps(&argv(&["cc", "--version"]), &env, cwd),
            None,
            "a dispatcher's answer is not its own"
        );
    }

    #[test]
    fn a_rustup_proxy_is_stamped_by_its_settings_toolchains_and_override_files() {
        let home = tempfile::tempdir().unwrap();
        let cargo_bin = home.path().join(".cargo/bin");
        native_program(&cargo_bin.join("rustup"));
        std::os::unix::fs::symlink("rustup", cargo_bin.join("rustc")).unwrap();
        let rustup = home.path().join(".rustup");
        native_program(&rustup.join("toolchains/stable-x/bin/rustc"));
        native_program(&rustup.join("toolchains/1.80-x/bin/rustc"));
        let project = home.path().join("project/crate");
        std::fs::create_dir_all(&project).unwrap();
        let env = environment(cargo_bin.to_str().unwrap(), home.path());
        let stamps = probe_stamps(&argv(&["rustc", "-vV"]), &env, &project).unwrap();
        let listed = paths(&stamps);
        let at = |relative: &str| home.path().join(relative).to_string_lossy().into_owned();
        for expected in [
            at(".cargo/bin/rustc"),
            at(".cargo/bin/rustup"),
            at(".rustup/settings.toml"),
            at(".rustup/toolchains"),
            at(".rustup/toolchains/1.80-x/bin/rustc"),
            at(".rustup/toolchains/stable-x/bin/rustc"),
            at(".rustup/toolchains/stable-x/lib/rustlib/multirust-channel-manifest.toml"),
            at("project/crate/rust-toolchain.toml"),
            at("project/rust-toolchain"),
            "/rust-toolchain.toml".to_owned(),
        ] {
            assert!(listed.contains(&expected), "{expected} not in {listed:?}");
        }
        // Adding an override file changes the stamps (it was stamped as absent).
        std::fs::write(home.path().join("project/rust-toolchain.toml"), "").unwrap();
        let again = probe_stamps(&argv(&["rustc", "-vV"]), &env, &project).unwrap();
        assert_ne!(stamps, again);
        let mut other = env.clone();
        other.insert("RUSTUP_HOME".to_owned(), "relative".to_owned());
        assert_eq!(
            probe_stamps(&argv(&["rustc", "-vV"]), &other, &project),
            None
        );
    }

    #[test]
    fn a_pyenv_shim_is_stamped_by_its_version_files_and_interpreters() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join(".pyenv");
        let shims = root.join("shims");
        std::fs::create_dir_all(&shims).unwrap();
        std::fs::write(
            shims.join("python3"),
            format!(
                "#!/usr/bin/env bash\nset -e\nexport PYENV_ROOT=\"{}\"\nexec \"{}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
                root.display(),
                root.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            shims.join("python3"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        native_program(&root.join("versions/3.12.1/bin/python3.12"));
        std::os::unix::fs::symlink("python3.12", root.join("versions/3.12.1/bin/python3")).unwrap();
        std::fs::create_dir_all(root.join("versions/3.12.1/lib/python3.12/site-packages")).unwrap();
        let env = environment(&format!("{}:/usr/bin", shims.display()), home.path());
        let probe = argv(&["python3", "-c", PYTHON_IDENTITY_SCRIPT]);
        let stamps = probe_stamps(&probe, &env, home.path()).unwrap();
        let listed = paths(&stamps);
        let at = |relative: &str| root.join(relative).to_string_lossy().into_owned();
        for expected in [
            at("shims/python3"),
            at("version"),
            at("versions"),
            at("versions/3.12.1/bin/python3"),
            at("versions/3.12.1/bin/python3.12"),
            at("versions/3.12.1/lib/python3.12/site-packages"),
            "/usr/bin/python3".to_owned(),
            home.path()
                .join(".python-version")
                .to_string_lossy()
                .into_owned(),
        ] {
            assert!(listed.contains(&expected), "{expected} not in {listed:?}");
        }
    }

    #[test]
    fn a_virtual_environment_is_stamped_by_its_configuration_and_site_directories() {
        let home = tempfile::tempdir().unwrap();
        let base = home.path().join("base");
        native_program(&base.join("bin/python3.12"));
        std::fs::create_dir_all(base.join("lib/python3.12/site-packages")).unwrap();
        let venv = home.path().join("ws/.venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::os::unix::fs::symlink(base.join("bin/python3.12"), venv.join("bin/python3")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!("home = {}\n", base.join("bin").display()),
        )
        .unwrap();
        let site = venv.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let env = environment("/usr/bin", home.path());
        let cwd = home.path().join("ws/pkg");
        std::fs::create_dir_all(&cwd).unwrap();
        let probe = argv(&["../.venv/bin/python3", "-c", PYTHON_IDENTITY_SCRIPT]);
        let stamps = probe_stamps(&probe, &env, &cwd).unwrap();
        let listed = paths(&stamps);
        let shown = |path: PathBuf| path.to_string_lossy().into_owned();
        for expected in [
            shown(cwd.join("../.venv/bin/python3")),
            shown(base.join("bin/python3.12")),
            shown(cwd.join("../.venv/pyvenv.cfg")),
            shown(cwd.join("../.venv/lib/python3.12/site-packages")),
            shown(cwd.join("../.venv/lib/python3.12/dist-packages")),
            shown(base.join("lib/python3.12/site-packages")),
        ] {
            assert!(listed.contains(&expected), "{expected} not in {listed:?}");
        }
        // Installing a distribution adds an entry to the site directory: new stamps.
        std::fs::create_dir(site.join("extra-1.0.dist-info")).unwrap();
        assert_ne!(probe_stamps(&probe, &env, &cwd).unwrap(), stamps);
        // Another script has no stamps: it runs every time.
        let other = argv(&["../.venv/bin/python3", "-c", "import sys"]);
        assert_eq!(probe_stamps(&other, &env, &cwd), None);
    }

    /// The prelude's Python rules probe with exactly this script (its stamps are known
    /// only for it).
    #[test]
    fn the_prelude_probes_python_with_the_identity_script() {
        let prelude = include_str!("../../once_starlark/prelude/python.star");
        assert!(
            prelude.contains(&format!(
                "_PYTHON_ENVIRONMENT_SCRIPT = \"\"\"{PYTHON_IDENTITY_SCRIPT}\"\"\""
            )),
            "python.star's _PYTHON_ENVIRONMENT_SCRIPT differs from PYTHON_IDENTITY_SCRIPT"
        );
    }
}
