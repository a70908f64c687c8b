//! Tests: the prelude contract and module evaluation.

use std::fmt::Write as _;

use once_model::{KindOrigin, KindSchema};

mod declarations;
mod limits;
mod module;
mod plan;
mod prelude;

/// A compact, line-oriented rendering of a kind for snapshots (docs prose left out).
pub(crate) fn render_kind(kind: &KindSchema) -> String {
    let mut out = String::new();
    let origin = match &kind.origin {
        KindOrigin::Prelude(path) => format!("prelude {path}"),
        KindOrigin::Module(path) => format!("module {path}"),
    };
    let _ = writeln!(out, "kind {} ({origin})", kind.name);
    for attr in &kind.attrs {
        let mut flags = Vec::new();
        if attr.required {
            flags.push("required".to_owned());
        }
        if !attr.configurable {
            flags.push("fixed".to_owned());
        }
        if let Some(default) = &attr.default {
            flags.push(format!("default={default}"));
        }
        if !attr.allowed_values.is_empty() {
            flags.push(format!("values={}", attr.allowed_values.join("|")));
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        let _ = writeln!(out, "  attr {}: {}{flags}", attr.name, attr.ty);
    }
    for role in &kind.dependencies {
        let max = role.max.map(|m| m.to_string()).unwrap_or_default();
        let _ = writeln!(
            out,
            "  dep {} <- {} [{}..{max}]",
            role.name,
            role.providers.join(", "),
            role.min
        );
    }
    if !kind.providers.is_empty() {
        let _ = writeln!(out, "  provides {}", kind.providers.join(", "));
    }
    for cap in &kind.capabilities {
        let mut line = format!(
            "  capability {} -> {}",
            cap.name,
            cap.output_groups.join(", ")
        );
        if !cap.requires_outputs.is_empty() {
            let _ = write!(line, " (requires {})", cap.requires_outputs.join(", "));
        }
        if let Some(runner) = &cap.runner {
            let _ = write!(line, " (runner {runner})");
        }
        let _ = writeln!(out, "{line}");
    }
    for tool in &kind.tools {
        let _ = writeln!(out, "  tool {}", tool.name);
    }
    for reference in &kind.source_references {
        let _ = writeln!(
            out,
            "  see {} {} {}",
            reference.system,
            reference.symbol,
            &reference.content_digest[..12.min(reference.content_digest.len())]
        );
    }
    for example in &kind.examples {
        let files: Vec<&str> = example.files.iter().map(|f| f.path.as_str()).collect();
        let _ = writeln!(out, "  example {}: {}", example.slug, files.join(", "));
    }
    out
}
