//! The checks of a target's dependencies: `deps` and each `dependencies` role against
//! its kind's roles (`unknown_dependency_role`, `dependency_count_mismatch`), and the
//! syntax of every reference (`invalid_label`, with the fix rewriting a Bazel label).
//! Whether a dependency exists, is visible and provides what the role accepts needs
//! the other packages: `validate` checks that.

use once_model::{DiagnosticCode, KindSchema, TextRange, resolve_reference};

use super::{ResolvedDep, TargetChecker, suggest_label};
use crate::manifests::{Configurable, DepList, Spanned};

impl TargetChecker<'_> {
    pub(super) fn check_dependencies(&mut self, kind: Option<&KindSchema>) -> Vec<ResolvedDep> {
        let mut deps = Vec::new();
        let mut roles: Vec<(String, String, TextRange, &Spanned<DepList>)> = Vec::new();
        if let Some(list) = &self.decl.deps {
            roles.push(("deps".to_owned(), "deps".to_owned(), list.range, list));
        }
        for (role, list) in &self.decl.dependencies {
            roles.push((
                role.value.clone(),
                format!("dependencies.{}", role.value),
                role.range,
                list,
            ));
        }
        for (role_name, attribute, role_range, list) in roles {
            // `deps` is the top-level field; inside `dependencies` it is never a role.
            let role = kind
                .filter(|_| !(role_name == "deps" && attribute != "deps"))
                .and_then(|k| k.dependency_role(&role_name));
            if let Some(kind) = kind
                && role.is_none()
            {
                let (code, message) = if attribute == "deps" {
                    (
                        DiagnosticCode::UnknownDependencyRole,
                        format!(
                            "target kind `{}` has no `deps` role: it takes no `deps`",
                            kind.name
                        ),
                    )
                } else if role_name == "deps" {
                    (
                        DiagnosticCode::UnknownDependencyRole,
                        "`deps` is not a named role: use the top-level `deps` field".to_owned(),
                    )
                } else {
                    (
                        DiagnosticCode::UnknownDependencyRole,
                        format!(
                            "target kind `{}` has no dependency role `{role_name}`",
                            kind.name
                        ),
                    )
                };
                let named: Vec<&str> = kind
                    .dependencies
                    .iter()
                    .map(|d| d.name.as_str())
                    .filter(|n| *n != "deps")
                    .collect();
                let repair = if attribute == "deps" {
                    match named.is_empty() {
                        true => "Remove `deps`; this kind takes no dependencies".to_owned(),
                        false => format!(
                            "Move the entries to a named role: {}",
                            crate::manifests::backticked(&named)
                        ),
                    }
                } else if named.is_empty() {
                    "Remove this role; the kind declares no named dependency roles".to_owned()
                } else {
                    format!("Use one of: {}", crate::manifests::backticked(&named))
                };
                self.report(code, message, role_range, Some(&attribute))
                    .repairs
                    .push(repair);
                continue;
            }
            let entries: Vec<Spanned<String>> = match &list.value {
                Configurable::Value(entries) => entries.clone(),
                Configurable::Select(branches) => {
                    let tokens = branches.iter().map(|b| b.token.value.as_str());
                    match self.configuration.choose(tokens) {
                        Some(token) => branches
                            .iter()
                            .find(|b| b.token.value == token)
                            .map(|b| b.value.clone())
                            .unwrap_or_default(),
                        None => {
                            self.report_no_matching_branch(&attribute, list.range, "[...]");
                            Vec::new()
                        }
                    }
                }
            };
            let mut count = 0u32;
            for entry in &entries {
                match resolve_reference(&self.manifest.package, &entry.value) {
                    Ok(label) => {
                        count += 1;
                        deps.push(ResolvedDep {
                            role: role_name.clone(),
                            label,
                            range: entry.range,
                        });
                    }
                    Err(err) => {
                        let message = format!("dependency `{}` {err}", entry.value);
                        let suggestion = err.suggestion().map(str::to_owned);
                        let diagnostic = self.report(
                            DiagnosticCode::InvalidLabel,
                            message,
                            entry.range,
                            Some(&attribute),
                        );
                        if let Some(suggestion) = suggestion {
                            suggest_label(diagnostic, &entry.value, &suggestion, entry.range);
                        }
                    }
                }
            }
            if let Some(role) = role
                && (count < role.min || role.max.is_some_and(|max| count > max))
            {
                let bound = match (role.min, role.max) {
                    (min, Some(max)) if min == max => format!("exactly {min}"),
                    (0, Some(max)) => format!("at most {max}"),
                    (min, Some(max)) => format!("between {min} and {max}"),
                    (min, None) => format!("at least {min}"),
                };
                let noun = if bound.ends_with(" 1") {
                    "dependency"
                } else {
                    "dependencies"
                };
                let message = format!(
                    "dependency role `{role_name}` must contain {bound} {noun}; got {count}"
                );
                self.report(
                    DiagnosticCode::DependencyCountMismatch,
                    message,
                    list.range,
                    Some(&attribute),
                )
                .repairs
                .push(format!("Set `{attribute}` to contain {bound} {noun}"));
            }
        }
        // Required roles that are absent altogether.
        if let Some(kind) = kind {
            for role in &kind.dependencies {
                let present = if role.name == "deps" {
                    self.decl.deps.is_some()
                } else {
                    self.decl
                        .dependencies
                        .iter()
                        .any(|(r, _)| r.value == role.name)
                };
                if !present && role.min > 0 {
                    let attribute = if role.name == "deps" {
                        "deps".to_owned()
                    } else {
                        format!("dependencies.{}", role.name)
                    };
                    let noun = if role.min == 1 {
                        "dependency"
                    } else {
                        "dependencies"
                    };
                    let message = format!(
                        "dependency role `{}` must contain at least {} {noun}; got 0",
                        role.name, role.min
                    );
                    let anchor = self.decl.anchor();
                    self.report(
                        DiagnosticCode::DependencyCountMismatch,
                        message,
                        anchor,
                        Some(&attribute),
                    )
                    .repairs
                    .push(format!("Set `{attribute}` to at least {} {noun}", role.min));
                }
            }
        }
        deps
    }
}
