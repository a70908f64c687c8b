//! The declaration helpers every module sees as globals: `target_kind`, the `attr`
//! namespace, `dep`, `capability`, `tool`, `source_reference` and `example`.
//!
//! They are native functions. Each validates its own arguments and fails with an error that
//! starlark attaches to the call expression, so every diagnostic points at the offending
//! call in the module. `target_kind` records the finished [`KindSchema`] in the
//! [`DeclarationContext`] reachable through `Evaluator::extra`.

use std::collections::HashSet;

use anyhow::{anyhow, bail};
use once_model::{
    AttrSpec, AttrType, AttrValue, Capability, DependencyRole, Example, ExampleFile, Float,
    KindSchema, SourceReference, ToolSpec,
};
use sha2::{Digest, Sha256};
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::{DictRef, UnpackDictEntries};
use starlark::values::float::StarlarkFloat;
use starlark::values::list::ListRef;
use starlark::values::list_or_tuple::UnpackListOrTuple;
use starlark::values::none::{NoneOr, NoneType};
use starlark::values::tuple::TupleRef;
use starlark::values::{UnpackValue, Value, ValueLike};

use crate::values::{
    AttrDecl, CapabilityDecl, DeclarationContext, DepDecl, ExampleDecl, SourceReferenceDecl,
    ToolDecl,
};

/// The capabilities a kind may expose.
pub(crate) const CAPABILITY_NAMES: [&str; 3] = ["build", "run", "test"];

/// How deep a default value may nest (lists in dicts in lists …); also stops cycles.
const MAX_VALUE_DEPTH: usize = 32;

fn context<'a>(eval: &Evaluator<'_, 'a, '_>) -> anyhow::Result<&'a DeclarationContext> {
    eval.extra
        .and_then(|extra| extra.downcast_ref::<DeclarationContext>())
        .ok_or_else(|| anyhow!("internal error: declaration helper called outside a once module"))
}

/// The global declaration helpers (everything but the `attr` namespace).
#[starlark_module]
pub(crate) fn declaration_globals(builder: &mut GlobalsBuilder) {
    /// Declares a target kind: its documentation, typed attributes, dependency roles,
    /// emitted providers, capabilities, tools, source references and starter examples.
    // One Rust parameter per Starlark keyword.
    #[allow(clippy::too_many_arguments)]
    fn target_kind<'v>(
        name: &str,
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = UnpackDictEntries::default())]
        attrs: UnpackDictEntries<&'v str, &'v AttrDecl>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        deps: UnpackListOrTuple<&'v DepDecl>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        providers: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        capabilities: UnpackListOrTuple<&'v CapabilityDecl>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        tools: UnpackListOrTuple<&'v ToolDecl>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        workspace_inputs: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        source_references: UnpackListOrTuple<&'v SourceReferenceDecl>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        examples: UnpackListOrTuple<&'v ExampleDecl>,
        #[starlark(require = named, default = UnpackDictEntries::default())]
        implementations: UnpackDictEntries<&'v str, Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let ctx = context(eval)?;
        let schema = KindSchema {
            name: name.to_owned(),
            docs: docs.trim().to_owned(),
            attrs: attrs
                .entries
                .into_iter()
                .map(|(attr_name, decl)| AttrSpec {
                    name: attr_name.to_owned(),
                    ..decl.0.clone()
                })
                .collect(),
            dependencies: deps.items.into_iter().map(|d| d.0.clone()).collect(),
            providers: providers.items.into_iter().map(str::to_owned).collect(),
            capabilities: capabilities
                .items
                .into_iter()
                .map(|c| c.0.clone())
                .collect(),
            tools: tools.items.into_iter().map(|t| t.0.clone()).collect(),
            workspace_inputs: workspace_inputs
                .items
                .into_iter()
                .map(str::to_owned)
                .collect(),
            source_references: source_references
                .items
                .into_iter()
                .map(|s| s.0.clone())
                .collect(),
            examples: examples.items.into_iter().map(|e| e.0.clone()).collect(),
            origin: ctx.origin.clone(),
        };
        validate_kind(ctx, &schema)?;
        for (capability, function) in &implementations.entries {
            if !schema.capabilities.iter().any(|c| c.name == *capability) {
                bail!(
                    "kind `{name}`: `implementations` names capability `{capability}`, which \
                     the kind does not declare"
                );
            }
            if function.get_type() != "function" {
                bail!(
                    "kind `{name}`: the implementation of `{capability}` must be a function \
                     taking the context, got {}",
                    function.get_type()
                );
            }
        }
        // The functions stay in the module (under names no module can write), where
        // planning finds them after freezing it.
        for (capability, function) in implementations.entries {
            eval.module().set(
                &crate::plan::implementation_slot(name, capability),
                function,
            );
        }
        let module = match &ctx.origin {
            once_model::KindOrigin::Module(path) | once_model::KindOrigin::Prelude(path) => path,
        };
        // The outermost call frame located in this module: the declaration site even
        // when a helper function (possibly loaded from another module) made the call.
        let site = eval
            .call_stack()
            .frames
            .iter()
            .filter_map(|frame| frame.location.as_ref())
            .find(|location| location.filename() == module.as_str())
            .map(|location| {
                let span = location.resolve_span();
                crate::KindSite {
                    kind: schema.name.clone(),
                    line: span.begin.line as u32 + 1,
                    column: span.begin.column as u32 + 1,
                    end_line: span.end.line as u32 + 1,
                    end_column: span.end.column as u32 + 1,
                }
            });
        ctx.sites.borrow_mut().extend(site);
        ctx.kinds.borrow_mut().push(schema);
        Ok(NoneType)
    }

    /// Declares a dependency role. `deps` is the default role (the target's top-level
    /// `deps` field); other names are keys of the target's `dependencies` table. A
    /// dependency fits the role when it emits any of `providers`.
    fn dep<'v>(
        #[starlark(default = "deps")] name: &str,
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        providers: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = 0)] min: i32,
        #[starlark(require = named, default = NoneOr::None)] max: NoneOr<i32>,
    ) -> anyhow::Result<DepDecl> {
        check_identifier("dependency role", name)?;
        let providers = string_list("provider", providers.items, check_identifier)?;
        if min < 0 {
            bail!("dep `{name}`: `min` must be 0 or more, got {min}");
        }
        let max = match max {
            NoneOr::None => None,
            NoneOr::Other(max) if max < 0 => {
                bail!("dep `{name}`: `max` must be 0 or more, got {max}")
            }
            NoneOr::Other(max) if max < min => {
                bail!("dep `{name}`: `min` ({min}) is greater than `max` ({max})")
            }
            NoneOr::Other(max) => Some(max.unsigned_abs()),
        };
        Ok(DepDecl(DependencyRole {
            name: name.to_owned(),
            docs: docs.trim().to_owned(),
            providers,
            min: min.unsigned_abs(),
            max,
        }))
    }

    /// Declares a capability (`build`, `run` or `test`): the output groups it produces and
    /// the output groups (of other capabilities) it needs built first. `runner` names the
    /// test runner family of a `test` capability (`cargo`, `sh`, …).
    fn capability<'v>(
        name: &str,
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = UnpackListOrTuple { items: vec!["default"] })]
        output_groups: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        requires_outputs: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = NoneOr::None)] runner: NoneOr<&str>,
    ) -> anyhow::Result<CapabilityDecl> {
        if !CAPABILITY_NAMES.contains(&name) {
            bail!(
                "unknown capability `{name}`; a capability is one of {}",
                CAPABILITY_NAMES.map(|c| format!("`{c}`")).join(", ")
            );
        }
        let output_groups = string_list("output group", output_groups.items, check_identifier)?;
        let requires_outputs = string_list(
            "required output group",
            requires_outputs.items,
            check_identifier,
        )?;
        let runner = match runner {
            NoneOr::None => None,
            NoneOr::Other(runner) => {
                if name != "test" {
                    bail!("capability `{name}`: only a `test` capability takes a `runner`");
                }
                check_identifier("test runner", runner)?;
                Some(runner.to_owned())
            }
        };
        Ok(CapabilityDecl(Capability {
            name: name.to_owned(),
            docs: docs.trim().to_owned(),
            output_groups,
            requires_outputs,
            runner,
        }))
    }

    /// Declares a program the kind runs, looked up on `PATH`.
    fn tool(name: &str, #[starlark(default = "")] docs: &str) -> anyhow::Result<ToolDecl> {
        check_tool_name(name)?;
        Ok(ToolDecl(ToolSpec {
            name: name.to_owned(),
            docs: docs.trim().to_owned(),
        }))
    }

    /// Names the equivalent concept in another build system, so users migrating from it
    /// can find this kind.
    fn source_reference(
        system: &str,
        symbol: &str,
        url: &str,
        use_when: &str,
    ) -> anyhow::Result<SourceReferenceDecl> {
        for (field, value) in [
            ("system", system),
            ("symbol", symbol),
            ("url", url),
            ("use_when", use_when),
        ] {
            if value.trim().is_empty() {
                bail!("source_reference: `{field}` must not be empty");
            }
        }
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            bail!("source_reference: `url` must be an http(s) URL, got `{url}`");
        }
        Ok(SourceReferenceDecl(SourceReference {
            system: system.to_owned(),
            symbol: symbol.to_owned(),
            url: url.to_owned(),
            use_when: use_when.trim().to_owned(),
            content_digest: content_digest(system, symbol, url),
        }))
    }

    /// Declares a runnable starter workspace. `files` is a dict `{path: contents}`; in the
    /// built-in prelude it may instead name a directory under `prelude/examples/`.
    fn example<'v>(
        slug: &str,
        name: &str,
        use_when: &str,
        #[starlark(require = named)] files: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<ExampleDecl> {
        let ctx = context(eval)?;
        check_slug(slug)?;
        for (field, value) in [("name", name), ("use_when", use_when)] {
            if value.trim().is_empty() {
                bail!("example `{slug}`: `{field}` must not be empty");
            }
        }
        let mut example_files = example_files(ctx, slug, files)?;
        example_files.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(pair) = example_files.windows(2).find(|w| w[0].path == w[1].path) {
            bail!("example `{slug}`: file `{}` is listed twice", pair[0].path);
        }
        if !example_files
            .iter()
            .any(|f| f.path == "once.toml" || f.path.ends_with("/once.toml"))
        {
            bail!("example `{slug}`: the files must include a `once.toml` manifest");
        }
        if let Some(empty) = example_files.iter().find(|f| f.contents.is_empty()) {
            bail!("example `{slug}`: file `{}` is empty", empty.path);
        }
        Ok(ExampleDecl(Example {
            slug: slug.to_owned(),
            name: name.trim().to_owned(),
            use_when: use_when.trim().to_owned(),
            files: example_files,
        }))
    }
}

/// The `attr` namespace: one typed constructor per attribute type.
#[starlark_module]
pub(crate) fn attr_namespace(builder: &mut GlobalsBuilder) {
    /// A string attribute; `values` restricts it to a fixed set.
    fn string<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        values: UnpackListOrTuple<&'v str>,
    ) -> anyhow::Result<AttrDecl> {
        make_attr(
            AttrType::String,
            docs,
            required,
            default,
            configurable,
            values.items,
        )
    }

    /// A boolean attribute.
    fn bool<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        make_attr(
            AttrType::Bool,
            docs,
            required,
            default,
            configurable,
            Vec::new(),
        )
    }

    /// An integer attribute; `minimum` and `maximum` bound its values (inclusive, both
    /// or neither).
    fn int<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
        #[starlark(require = named)] minimum: Option<i64>,
        #[starlark(require = named)] maximum: Option<i64>,
    ) -> anyhow::Result<AttrDecl> {
        let mut decl = make_attr(
            AttrType::Int,
            docs,
            required,
            default,
            configurable,
            Vec::new(),
        )?;
        let range = match (minimum, maximum) {
            (None, None) => None,
            (Some(low), Some(high)) if low <= high => Some((low, high)),
            (Some(low), Some(high)) => bail!("`minimum` ({low}) is above `maximum` ({high})"),
            _ => bail!("`minimum` and `maximum` go together: set both or neither"),
        };
        if let (Some((low, high)), Some(AttrValue::Int(default))) = (range, &decl.0.default)
            && !(low..=high).contains(default)
        {
            bail!("default `{default}` is not between {low} and {high}");
        }
        decl.0.range = range;
        Ok(decl)
    }

    /// A floating-point attribute (integers are accepted too).
    fn float<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        make_attr(
            AttrType::Float,
            docs,
            required,
            default,
            configurable,
            Vec::new(),
        )
    }

    /// A reference to another target, resolved like a `deps` entry.
    fn label<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        make_attr(
            AttrType::Label,
            docs,
            required,
            default,
            configurable,
            Vec::new(),
        )
    }

    /// A package-relative path of a file the package has (checked by resolution).
    fn path<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        make_attr(
            AttrType::Path,
            docs,
            required,
            default,
            configurable,
            Vec::new(),
        )
    }

    /// A list of strings; `values` restricts every element to a fixed set.
    fn string_list<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        values: UnpackListOrTuple<&'v str>,
    ) -> anyhow::Result<AttrDecl> {
        let ty = AttrType::List(Box::new(AttrType::String));
        make_attr(ty, docs, required, default, configurable, values.items)
    }

    /// A list of target references.
    fn label_list<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        let ty = AttrType::List(Box::new(AttrType::Label));
        make_attr(ty, docs, required, default, configurable, Vec::new())
    }

    /// A list of package-relative paths of files the package has.
    fn path_list<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        let ty = AttrType::List(Box::new(AttrType::Path));
        make_attr(ty, docs, required, default, configurable, Vec::new())
    }

    /// A table from string keys to string values.
    fn string_dict<'v>(
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
    ) -> anyhow::Result<AttrDecl> {
        let ty = AttrType::Dict(Box::new(AttrType::String));
        make_attr(ty, docs, required, default, configurable, Vec::new())
    }

    /// An attribute of any written type: `string`, `bool`, `int`, `float`, `label`, `path`,
    /// `any`, `list[T]` or `dict[T]` (string keys).
    fn of<'v>(
        r#type: &str,
        #[starlark(default = "")] docs: &str,
        #[starlark(require = named, default = false)] required: bool,
        #[starlark(require = named)] default: Option<Value<'v>>,
        #[starlark(require = named, default = true)] configurable: bool,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        values: UnpackListOrTuple<&'v str>,
    ) -> anyhow::Result<AttrDecl> {
        let ty = AttrType::parse(r#type).ok_or_else(|| {
            anyhow!(
                "unknown attribute type `{type}`; expected one of string, bool, int, float, \
                 label, path, any, list[T], dict[T]",
                type = r#type
            )
        })?;
        make_attr(ty, docs, required, default, configurable, values.items)
    }
}

fn make_attr(
    ty: AttrType,
    docs: &str,
    required: bool,
    default: Option<Value<'_>>,
    configurable: bool,
    values: Vec<&str>,
) -> anyhow::Result<AttrDecl> {
    let default = match default {
        Some(value) if !value.is_none() => Some(to_attr_value(value, 0)?),
        _ => None,
    };
    let allowed_values = string_list("allowed value", values, |_, v| {
        if v.is_empty() {
            Err(anyhow!("allowed values must not be empty strings"))
        } else {
            Ok(())
        }
    })?;
    if !allowed_values.is_empty() {
        let element = match &ty {
            AttrType::List(inner) => inner.as_ref(),
            other => other,
        };
        if !matches!(element, AttrType::String) {
            bail!("`values` applies only to string and list-of-string attributes, not `{ty}`");
        }
    }
    if let Some(default) = &default {
        if required {
            bail!("a required attribute cannot have a default (`{default}`); drop one of them");
        }
        ty.accepts(default)
            .map_err(|e| anyhow!("default `{default}` does not fit type `{ty}`: {e}"))?;
        if !allowed_values.is_empty() {
            let items: Vec<&AttrValue> = match default {
                AttrValue::List(items) => items.iter().collect(),
                single => vec![single],
            };
            for item in items {
                if let Some(text) = item.as_str()
                    && !allowed_values.iter().any(|v| v == text)
                {
                    bail!(
                        "default `{text}` is not one of the allowed values: {}",
                        allowed_values.join(", ")
                    );
                }
            }
        }
    }
    Ok(AttrDecl(AttrSpec {
        name: String::new(),
        ty,
        required,
        default,
        docs: docs.trim().to_owned(),
        configurable,
        allowed_values,
        range: None,
    }))
}

/// Converts a Starlark default into the manifest value space.
fn to_attr_value(value: Value<'_>, depth: usize) -> anyhow::Result<AttrValue> {
    if depth > MAX_VALUE_DEPTH {
        bail!("default value nests more than {MAX_VALUE_DEPTH} levels deep");
    }
    if let Some(b) = value.unpack_bool() {
        return Ok(AttrValue::Bool(b));
    }
    if let Some(s) = value.unpack_str() {
        return Ok(AttrValue::String(s.to_owned()));
    }
    if let Some(f) = value.downcast_ref::<StarlarkFloat>() {
        return Ok(AttrValue::Float(Float(f.0)));
    }
    if value.get_type() == "int" {
        return match i64::unpack_value(value) {
            Ok(Some(i)) => Ok(AttrValue::Int(i)),
            _ => Err(anyhow!("integer default `{value}` does not fit in 64 bits")),
        };
    }
    let items = ListRef::from_value(value)
        .map(|l| l.content())
        .or_else(|| TupleRef::from_value(value).map(|t| t.content()));
    if let Some(items) = items {
        return items
            .iter()
            .map(|item| to_attr_value(*item, depth + 1))
            .collect::<anyhow::Result<Vec<_>>>()
            .map(AttrValue::List);
    }
    if let Some(dict) = DictRef::from_value(value) {
        let mut entries = Vec::new();
        for (key, item) in dict.iter() {
            let key = key.unpack_str().ok_or_else(|| {
                anyhow!("default dict keys must be strings, got {}", key.get_type())
            })?;
            entries.push((key.to_owned(), to_attr_value(item, depth + 1)?));
        }
        return Ok(AttrValue::Dict(entries));
    }
    bail!(
        "a default must be a string, bool, int, float, list or dict, got {}",
        value.get_type()
    )
}

/// Checks a whole kind before it is recorded; errors land on the `target_kind` call.
fn validate_kind(ctx: &DeclarationContext, kind: &KindSchema) -> anyhow::Result<()> {
    let name = kind.name.as_str();
    check_identifier("kind name", name)?;
    if ctx.kinds.borrow().iter().any(|k| k.name == name) {
        ctx.duplicate.set(true);
        bail!("target kind `{name}` is declared more than once");
    }
    if ctx.reserved.contains(name) {
        ctx.duplicate.set(true);
        bail!("target kind `{name}` is built in; choose another name");
    }
    let needs_docs = |what: String, docs: &str| -> anyhow::Result<()> {
        if ctx.strict && docs.trim().is_empty() {
            bail!("{what} needs non-empty `docs`");
        }
        Ok(())
    };
    needs_docs(format!("target kind `{name}`"), &kind.docs)?;

    let mut seen = HashSet::new();
    for attr in &kind.attrs {
        check_identifier("attribute name", &attr.name)
            .map_err(|e| anyhow!("kind `{name}`: {e}"))?;
        needs_docs(
            format!("attribute `{}` of kind `{name}`", attr.name),
            &attr.docs,
        )?;
        seen.insert(attr.name.as_str());
    }

    seen.clear();
    for role in &kind.dependencies {
        if !seen.insert(role.name.as_str()) {
            bail!(
                "kind `{name}`: dependency role `{}` is declared twice",
                role.name
            );
        }
        needs_docs(
            format!("dependency role `{}` of kind `{name}`", role.name),
            &role.docs,
        )?;
    }

    seen.clear();
    for provider in &kind.providers {
        check_identifier("provider", provider).map_err(|e| anyhow!("kind `{name}`: {e}"))?;
        if !seen.insert(provider.as_str()) {
            bail!("kind `{name}`: provider `{provider}` is listed twice");
        }
    }

    seen.clear();
    for cap in &kind.capabilities {
        if !seen.insert(cap.name.as_str()) {
            bail!("kind `{name}`: capability `{}` is declared twice", cap.name);
        }
        needs_docs(
            format!("capability `{}` of kind `{name}`", cap.name),
            &cap.docs,
        )?;
    }
    for cap in &kind.capabilities {
        for required in &cap.requires_outputs {
            let produced = kind
                .capabilities
                .iter()
                .any(|other| other.name != cap.name && other.output_groups.contains(required));
            if !produced {
                bail!(
                    "kind `{name}`: capability `{}` requires output group `{required}`, which no \
                     other capability of the kind produces",
                    cap.name
                );
            }
        }
    }

    seen.clear();
    for tool in &kind.tools {
        if !seen.insert(tool.name.as_str()) {
            bail!("kind `{name}`: tool `{}` is listed twice", tool.name);
        }
        needs_docs(format!("tool `{}` of kind `{name}`", tool.name), &tool.docs)?;
    }

    let mut refs = HashSet::new();
    for reference in &kind.source_references {
        if !refs.insert((reference.system.as_str(), reference.symbol.as_str())) {
            bail!(
                "kind `{name}`: source reference {} `{}` is listed twice",
                reference.system,
                reference.symbol
            );
        }
    }

    seen.clear();
    for example in &kind.examples {
        if !seen.insert(example.slug.as_str()) {
            bail!("kind `{name}`: example `{}` is listed twice", example.slug);
        }
    }
    if ctx.strict && kind.examples.is_empty() {
        bail!("target kind `{name}` needs at least one example");
    }
    Ok(())
}

fn example_files(
    ctx: &DeclarationContext,
    slug: &str,
    files: Value<'_>,
) -> anyhow::Result<Vec<ExampleFile>> {
    if let Some(dir) = files.unpack_str() {
        let Some(embedded) = ctx.embedded else {
            bail!(
                "example `{slug}`: `files` must be a dict of {{path: contents}}; directory \
                 names are only understood in the built-in prelude"
            );
        };
        check_relative_path(dir).map_err(|e| anyhow!("example `{slug}`: {e}"))?;
        let prefix = format!("examples/{}/", dir.trim_end_matches('/'));
        let found: Vec<ExampleFile> = embedded
            .iter()
            .filter_map(|(path, contents)| {
                path.strip_prefix(&prefix).map(|rest| ExampleFile {
                    path: rest.to_owned(),
                    contents: std::borrow::Cow::Borrowed(*contents),
                })
            })
            .collect();
        if found.is_empty() {
            bail!("example `{slug}`: no files under `prelude/{prefix}`");
        }
        return Ok(found);
    }
    let Some(dict) = DictRef::from_value(files) else {
        bail!(
            "example `{slug}`: `files` must be a dict of {{path: contents}}, got {}",
            files.get_type()
        );
    };
    let mut out = Vec::new();
    for (path, contents) in dict.iter() {
        let (Some(path), Some(contents)) = (path.unpack_str(), contents.unpack_str()) else {
            bail!(
                "example `{slug}`: `files` maps path strings to content strings, got {} -> {}",
                path.get_type(),
                contents.get_type()
            );
        };
        check_relative_path(path).map_err(|e| anyhow!("example `{slug}`: {e}"))?;
        out.push(ExampleFile {
            path: path.to_owned(),
            contents: contents.as_bytes().to_vec().into(),
        });
    }
    Ok(out)
}

/// Hex SHA-256 of `system \0 symbol \0 url`.
pub(crate) fn content_digest(system: &str, symbol: &str, url: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(system.as_bytes());
    hasher.update([0]);
    hasher.update(symbol.as_bytes());
    hasher.update([0]);
    hasher.update(url.as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn string_list(
    what: &str,
    items: Vec<&str>,
    check: impl Fn(&str, &str) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        check(what, item)?;
        if out.iter().any(|o| o == item) {
            bail!("{what} `{item}` is listed twice");
        }
        out.push(item.to_owned());
    }
    Ok(out)
}

/// Lower-case identifiers: `[a-z_][a-z0-9_]*`.
fn check_identifier(what: &str, name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        bail!(
            "invalid {what} `{name}`: use lower-case letters, digits and `_`, starting with a letter or `_`"
        )
    }
}

fn check_slug(slug: &str) -> anyhow::Result<()> {
    let mut chars = slug.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        bail!("invalid example slug `{slug}`: use lower-case letters, digits and `-`")
    }
}

fn check_tool_name(name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'));
    if ok {
        Ok(())
    } else {
        bail!("invalid tool name `{name}`: expected an executable name such as `cargo`")
    }
}

/// A `/`-separated relative path without `.`/`..`/empty segments.
fn check_relative_path(path: &str) -> anyhow::Result<()> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path
            .trim_end_matches('/')
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        bail!("`{path}` must be a relative `/`-separated path without `.` or `..` segments");
    }
    Ok(())
}
