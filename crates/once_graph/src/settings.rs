//! Workspace-wide settings from the root manifest: include/exclude, the configuration
//! that `select` resolves against, and module paths; and the packages they admit.

use once_db::{Db, Package, PackageFilter, Workspace};

use crate::manifests::manifest;

/// The target configuration: normalised os/arch and the ordered token list `select` tries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Configuration {
    pub os: String,
    pub arch: String,
    /// Platform tokens, then the workspace's extra tokens, then `default`.
    pub tokens: Vec<String>,
}

impl Configuration {
    pub fn new(os: &str, arch: &str, extra_tokens: &[String]) -> Configuration {
        let os = normalize_os(os);
        let arch = normalize_arch(arch);
        let arch_names: Vec<&str> = if arch == "aarch64" {
            vec!["arm64", "aarch64"]
        } else {
            vec![arch.as_str()]
        };
        let mut tokens: Vec<String> = arch_names.iter().map(|a| format!("{os}-{a}")).collect();
        tokens.push(os.clone());
        tokens.extend(arch_names.iter().map(|a| a.to_string()));
        for token in extra_tokens {
            if !token.is_empty() && !tokens.contains(token) && token != "default" {
                tokens.push(token.clone());
            }
        }
        tokens.push("default".into());
        Configuration { os, arch, tokens }
    }

    /// The first token, in token order, that `branches` has a key for.
    pub fn choose<'a>(
        &self,
        branch_tokens: impl Iterator<Item = &'a str> + Clone,
    ) -> Option<&'a str> {
        self.tokens
            .iter()
            .find_map(|token| branch_tokens.clone().find(|b| b == token))
    }

    /// The human form: `linux-x86_64 [linux-x86_64, linux, x86_64, default]`.
    pub fn describe(&self) -> String {
        format!("{}-{} [{}]", self.os, self.arch, self.tokens.join(", "))
    }
}

fn normalize_os(os: &str) -> String {
    match os.to_ascii_lowercase().as_str() {
        "darwin" | "mac" | "macosx" | "osx" => "macos".into(),
        other => other.to_owned(),
    }
}

fn normalize_arch(arch: &str) -> String {
    match arch.to_ascii_lowercase().as_str() {
        "arm64" => "aarch64".into(),
        "amd64" | "x64" => "x86_64".into(),
        other => other.to_owned(),
    }
}

/// The settings the root manifest declares (values only; their diagnostics are
/// reported with the root manifest's file diagnostics).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkspaceSettings {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub configuration: Configuration,
    pub module_paths: Vec<String>,
    /// `[workspace] test_attempts`: runs of a failing test case unless a target or the
    /// command line says otherwise.
    pub test_attempts: Option<u32>,
    /// `[workspace] sandbox`: `Some(true)` for `"on"`, `Some(false)` for `"off"`.
    pub sandbox: Option<bool>,
    /// `[workspace] python` as written (the Python interpreter setting of the built-in
    /// Python kinds, `ctx.toolchains["python"]` of every implementation).
    pub python: Option<String>,
    /// `[cache]`: the remote cache as declared.
    pub cache: Option<once_model::remote::RemoteCacheDecl>,
}

/// The root package, if the workspace root has a `once.toml`.
pub fn root_package(db: &dyn Db, workspace: Workspace) -> Option<Package> {
    workspace
        .packages(db)
        .iter()
        .copied()
        .find(|p| p.path(db).is_empty())
}

/// The root manifest's workspace settings, with the host platform as fallback.
#[salsa::tracked(returns(ref))]
pub fn workspace_settings(db: &dyn Db, workspace: Workspace) -> WorkspaceSettings {
    let host = workspace.host(db);
    let root = root_package(db, workspace).map(|package| manifest(db, package));
    let declared = root.and_then(|m| m.workspace.as_ref());
    let text = |v: &Option<crate::Spanned<String>>, fallback: &str| {
        v.as_ref()
            .filter(|s| !s.value.trim().is_empty())
            .map_or(fallback.to_owned(), |s| s.value.clone())
    };
    let strings =
        |list: &[crate::Spanned<String>]| list.iter().map(|s| s.value.clone()).collect::<Vec<_>>();
    let (include, exclude, os, arch, tokens) = match declared {
        Some(ws) => (
            strings(&ws.include),
            strings(&ws.exclude),
            text(&ws.os, &host.os),
            text(&ws.arch, &host.arch),
            strings(&ws.tokens),
        ),
        None => (
            Vec::new(),
            Vec::new(),
            host.os.clone(),
            host.arch.clone(),
            Vec::new(),
        ),
    };
    let module_paths = root
        .and_then(|m| m.modules.as_ref())
        .map(|m| strings(&m.paths))
        .unwrap_or_default();
    WorkspaceSettings {
        include,
        exclude,
        configuration: Configuration::new(&os, &arch, &tokens),
        module_paths,
        test_attempts: declared.and_then(|ws| ws.test_attempts.as_ref().map(|s| s.value)),
        sandbox: declared
            .and_then(|ws| ws.sandbox.as_ref())
            .map(|s| s.value == "on"),
        python: declared
            .and_then(|ws| ws.python.as_ref())
            .map(|s| s.value.clone()),
        cache: root.and_then(|m| m.cache.clone()),
    }
}

/// The packages of the workspace after `[workspace] include/exclude`, sorted by path.
#[salsa::tracked(returns(ref))]
pub fn workspace_packages(db: &dyn Db, workspace: Workspace) -> Vec<Package> {
    let settings = workspace_settings(db, workspace);
    let (filter, ..) = PackageFilter::new(&settings.include, &settings.exclude);
    workspace
        .packages(db)
        .iter()
        .copied()
        .filter(|p| filter.includes(p.path(db)))
        .collect()
}

/// Package lookup by path, over [`workspace_packages`].
#[salsa::tracked(returns(ref))]
pub fn package_by_path(db: &dyn Db, workspace: Workspace) -> PackageIndex {
    let mut entries: Vec<(String, Package)> = workspace_packages(db, workspace)
        .iter()
        .map(|p| (p.path(db).clone(), *p))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    PackageIndex { entries }
}

/// Package lookup by path over every package the walk found, before include/exclude
/// (which package directory a file is in does not depend on the filters).
#[salsa::tracked(returns(ref))]
pub fn package_directories(db: &dyn Db, workspace: Workspace) -> PackageIndex {
    let mut entries: Vec<(String, Package)> = workspace
        .packages(db)
        .iter()
        .map(|p| (p.path(db).clone(), *p))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    PackageIndex { entries }
}

/// A sorted path → package table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PackageIndex {
    entries: Vec<(String, Package)>,
}

impl PackageIndex {
    pub fn get(&self, path: &str) -> Option<Package> {
        self.entries
            .binary_search_by(|(p, _)| p.as_str().cmp(path))
            .ok()
            .map(|i| self.entries[i].1)
    }

    /// Whether a package lies at `path` or below it (every package, for the root `""`).
    pub fn has_at_or_below(&self, path: &str) -> bool {
        if path.is_empty() {
            return !self.entries.is_empty();
        }
        let directory = format!("{path}/");
        let first = self
            .entries
            .partition_point(|(p, _)| p.as_str() < directory.as_str());
        self.get(path).is_some()
            || self
                .entries
                .get(first)
                .is_some_and(|(p, _)| p.starts_with(&directory))
    }

    /// The deepest package whose directory contains the workspace-relative `path` (a
    /// package directory itself belongs to the package above it).
    pub fn owner_of(&self, path: &str) -> Option<Package> {
        once_db::discovery::enclosing_dirs(path).find_map(|dir| self.get(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_tokens_come_first_then_extra_then_default() {
        let linux = Configuration::new("linux", "x86_64", &[]);
        assert_eq!(linux.tokens, ["linux-x86_64", "linux", "x86_64", "default"]);
        let mac = Configuration::new("darwin", "arm64", &["release".into(), "macos".into()]);
        assert_eq!(
            mac.tokens,
            [
                "macos-arm64",
                "macos-aarch64",
                "macos",
                "arm64",
                "aarch64",
                "release",
                "default"
            ]
        );
        assert_eq!(
            linux.choose(["default", "linux"].into_iter()),
            Some("linux")
        );
        assert_eq!(linux.choose(["macos"].into_iter()), None);
    }
}
