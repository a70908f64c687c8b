//! The checks of a target's `[target.attrs]` against its kind's attribute schema:
//! unknown and missing attributes, value types and allowed values, `select` on
//! configurable attributes resolved against the workspace configuration, and label
//! attributes' reference syntax.

use once_model::{AttrSpec, AttrValue, DiagnosticCode, Fix, KindSchema, resolve_reference};
use rustc_hash::FxHashSet;

use super::{PackageFiles, TargetChecker, is_label_type, string_elements, suggest_label};
use crate::manifests::{AttrLiteral, Configurable};
use crate::text::closest;

impl TargetChecker<'_> {
    pub(super) fn check_attrs(
        &mut self,
        kind: &KindSchema,
        files: Option<PackageFiles<'_>>,
    ) -> Vec<(String, AttrValue)> {
        let mut values = Vec::new();
        for (name, value) in &self.decl.attrs {
            let attribute = format!("attrs.{}", name.value);
            let Some(spec) = kind.attr(&name.value) else {
                let suggestions =
                    closest(&name.value, kind.attrs.iter().map(|a| a.name.as_str()), 1);
                let message = format!(
                    "target kind `{}` has no attribute `{}`",
                    kind.name, name.value
                );
                let known: Vec<&str> = kind.attrs.iter().map(|a| a.name.as_str()).collect();
                let repair = match suggestions.first() {
                    Some(best) => format!("Rename `{}` to `{best}`", name.value),
                    None if known.is_empty() => {
                        format!("Remove `{}`; this kind has no attributes", name.value)
                    }
                    None => format!(
                        "Remove `{}`; known attributes: {}",
                        name.value,
                        crate::manifests::backticked(&known)
                    ),
                };
                let diagnostic = self.report(
                    DiagnosticCode::UnknownAttr,
                    message,
                    name.range,
                    Some(&attribute),
                );
                if let Some(best) = suggestions.first() {
                    diagnostic
                        .fixes
                        .push(Fix::replace(&repair, true, name.range, best.as_str()));
                }
                diagnostic.repairs.push(repair);
                continue;
            };
            match &value.value {
                Configurable::Value(v) => {
                    if self.check_attr_value(spec, &attribute, v, None) {
                        if let Some(files) = files {
                            self.check_attr_paths(spec, &attribute, v, None, files);
                        }
                        values.push((name.value.clone(), v.value.clone()));
                    }
                }
                Configurable::Select(branches) => {
                    if !spec.configurable {
                        let message = format!(
                            "attribute `{}` is not configurable; `select` is not allowed",
                            spec.name
                        );
                        let repair =
                            format!("Replace the select value with one `{}` value", spec.ty);
                        self.report(
                            DiagnosticCode::SelectOnNonConfigurableAttr,
                            message,
                            value.range,
                            Some(&attribute),
                        )
                        .repairs
                        .push(repair);
                        continue;
                    }
                    let mut all_valid = true;
                    for branch in branches {
                        let token = Some(branch.token.value.as_str());
                        let valid = self.check_attr_value(spec, &attribute, &branch.value, token);
                        if valid && let Some(files) = files {
                            self.check_attr_paths(spec, &attribute, &branch.value, token, files);
                        }
                        all_valid &= valid;
                    }
                    let tokens = branches.iter().map(|b| b.token.value.as_str());
                    match self.configuration.choose(tokens) {
                        Some(token) => {
                            if all_valid
                                && let Some(branch) =
                                    branches.iter().find(|b| b.token.value == token)
                            {
                                values.push((name.value.clone(), branch.value.value.clone()));
                            }
                        }
                        None if branches.is_empty() => {}
                        None => self.report_no_matching_branch(&attribute, value.range, "…"),
                    }
                }
            }
        }
        for spec in kind.attrs.iter().filter(|a| a.required) {
            if !self
                .decl
                .attrs
                .iter()
                .any(|(name, _)| name.value == spec.name)
            {
                let message = format!(
                    "target kind `{}` requires attribute `{}`",
                    kind.name, spec.name
                );
                let repair = format!("Set `attrs.{}` to a value of type `{}`", spec.name, spec.ty);
                let anchor = self.decl.anchor();
                self.report(
                    DiagnosticCode::MissingRequiredAttr,
                    message,
                    anchor,
                    Some(&format!("attrs.{}", spec.name)),
                )
                .repairs
                .push(repair);
            }
        }
        values
    }

    /// Checks one value (or select branch) against its spec; `true` when it is valid.
    fn check_attr_value(
        &mut self,
        spec: &AttrSpec,
        attribute: &str,
        value: &AttrLiteral,
        branch: Option<&str>,
    ) -> bool {
        let prefix = branch.map_or(String::new(), |b| format!("select branch `{b}`: "));
        if let Err(detail) = spec.ty.accepts(&value.value) {
            let message = format!(
                "attribute `{}` expects type `{}`: {prefix}{detail}",
                spec.name, spec.ty
            );
            let repair = format!("Set `{attribute}` to a value of type `{}`", spec.ty);
            self.report(
                DiagnosticCode::AttrTypeMismatch,
                message,
                value.range_at(&detail.path),
                Some(attribute),
            )
            .repairs
            .push(repair);
            return false;
        }
        if !spec.allowed_values.is_empty() {
            let allowed: FxHashSet<&str> = spec.allowed_values.iter().map(String::as_str).collect();
            let bad = string_elements(value)
                .into_iter()
                .find(|(s, _)| !allowed.contains(s));
            if let Some((bad, bad_range)) = bad {
                let allowed = spec.allowed_values.join(", ");
                let place = branch.map_or(String::new(), |b| format!(" in select branch `{b}`"));
                let message = format!(
                    "attribute `{}`{place} must be one of: {allowed}; got `{bad}`",
                    spec.name
                );
                let suggestion = closest(bad, spec.allowed_values.iter().map(String::as_str), 1);
                let diagnostic = self.report(
                    DiagnosticCode::AttrValueNotAllowed,
                    message,
                    bad_range,
                    Some(attribute),
                );
                if let Some(best) = suggestion.first() {
                    let title = format!("Replace `{bad}` with `{best}`");
                    diagnostic.fixes.push(Fix::replace(
                        &title,
                        true,
                        bad_range,
                        format!("\"{best}\""),
                    ));
                    diagnostic.repairs.push(title);
                } else {
                    diagnostic.repairs.push(format!("Use one of: {allowed}"));
                }
                return false;
            }
        }
        if let (Some((low, high)), AttrValue::Int(number)) = (spec.range, &value.value)
            && !(low..=high).contains(number)
        {
            let place = branch.map_or(String::new(), |b| format!(" in select branch `{b}`"));
            let message = format!(
                "attribute `{}`{place} must be between {low} and {high}; got `{number}`",
                spec.name
            );
            let clamped = (*number).clamp(low, high);
            let title = format!("Replace `{number}` with `{clamped}`");
            let range = value.range_at(&[]);
            let diagnostic = self.report(
                DiagnosticCode::AttrValueNotAllowed,
                message,
                range,
                Some(attribute),
            );
            diagnostic
                .fixes
                .push(Fix::replace(&title, true, range, clamped.to_string()));
            diagnostic.repairs.push(title);
            return false;
        }
        if is_label_type(&spec.ty) {
            let mut valid = true;
            for (reference, reference_range) in string_elements(value) {
                if let Err(err) = resolve_reference(&self.manifest.package, reference) {
                    let message =
                        format!("attribute `{}` reference `{reference}` {err}", spec.name);
                    let suggestion = err.suggestion().map(str::to_owned);
                    let diagnostic = self.report(
                        DiagnosticCode::InvalidLabel,
                        message,
                        reference_range,
                        Some(attribute),
                    );
                    if let Some(suggestion) = suggestion {
                        suggest_label(diagnostic, reference, &suggestion, reference_range);
                    }
                    valid = false;
                }
            }
            return valid;
        }
        true
    }
}
