//! Target kinds: their schemas (attributes, dependencies, capabilities), the catalog
//! listing and the starter examples.

use super::*;

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct AttrSchemaDto {
    pub name: String,
    pub ty: String,
    pub required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    pub docs: String,
    pub configurable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_values: Vec<String>,
    /// For an `int`: the smallest value allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<i64>,
    /// For an `int`: the largest value allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<i64>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DepSchemaDto {
    pub name: String,
    pub expected_providers: Vec<String>,
    pub docs: String,
    pub min_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_count: Option<u32>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SchemaCapabilityDto {
    pub name: String,
    pub docs: String,
    pub output_groups: Vec<String>,
    pub requires_outputs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SourceReferenceDto {
    pub system: String,
    pub symbol: String,
    pub url: String,
    pub use_when: String,
    pub content_digest: String,
}

pub fn source_reference(r: &SourceReference) -> SourceReferenceDto {
    SourceReferenceDto {
        system: r.system.clone(),
        symbol: r.symbol.clone(),
        url: r.url.clone(),
        use_when: r.use_when.clone(),
        content_digest: r.content_digest.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExampleSummaryDto {
    pub slug: String,
    pub name: String,
    pub use_when: String,
}

pub fn example_summary(e: &Example) -> ExampleSummaryDto {
    ExampleSummaryDto {
        slug: e.slug.clone(),
        name: e.name.clone(),
        use_when: e.use_when.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct KindSchemaDto {
    pub kind: String,
    pub docs: String,
    pub attrs: Vec<AttrSchemaDto>,
    pub deps: Vec<DepSchemaDto>,
    pub providers: Vec<String>,
    pub capabilities: Vec<SchemaCapabilityDto>,
    pub tools: Vec<ToolDto>,
    pub source_references: Vec<SourceReferenceDto>,
    pub examples: Vec<ExampleSummaryDto>,
}

pub fn kind_schema(kind: &KindSchema) -> KindSchemaDto {
    KindSchemaDto {
        kind: kind.name.clone(),
        docs: kind.docs.clone(),
        attrs: kind
            .attrs
            .iter()
            .map(|a| AttrSchemaDto {
                name: a.name.clone(),
                ty: a.ty.to_string(),
                required: a.required,
                default: a.default.as_ref().map(attr_value),
                docs: a.docs.clone(),
                configurable: a.configurable,
                allowed_values: a.allowed_values.clone(),
                minimum: a.range.map(|(minimum, _)| minimum),
                maximum: a.range.map(|(_, maximum)| maximum),
            })
            .collect(),
        deps: kind
            .dependencies
            .iter()
            .map(|d| DepSchemaDto {
                name: d.name.clone(),
                expected_providers: d.providers.clone(),
                docs: d.docs.clone(),
                min_count: d.min,
                max_count: d.max,
            })
            .collect(),
        providers: kind.providers.clone(),
        capabilities: kind
            .capabilities
            .iter()
            .map(|c| SchemaCapabilityDto {
                name: c.name.clone(),
                docs: c.docs.clone(),
                output_groups: c.output_groups.clone(),
                requires_outputs: c.requires_outputs.clone(),
                runner: c.runner.clone(),
            })
            .collect(),
        tools: kind
            .tools
            .iter()
            .map(|t| ToolDto {
                name: t.name.clone(),
                docs: t.docs.clone(),
            })
            .collect(),
        source_references: kind
            .source_references
            .iter()
            .map(source_reference)
            .collect(),
        examples: kind.examples.iter().map(example_summary).collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct KindListEntryDto {
    pub kind: String,
    pub docs: String,
    pub source_references: Vec<SourceReferenceDto>,
    pub examples: Vec<ExampleSummaryDto>,
}

pub fn kind_list_entry(kind: &KindSchema) -> KindListEntryDto {
    KindListEntryDto {
        kind: kind.name.clone(),
        docs: kind.docs.clone(),
        source_references: kind
            .source_references
            .iter()
            .map(source_reference)
            .collect(),
        examples: kind.examples.iter().map(example_summary).collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExampleFileDto {
    pub path: String,
    pub contents: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contents_base64: Option<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExampleDto {
    pub slug: String,
    pub name: String,
    pub use_when: String,
    pub files: Vec<ExampleFileDto>,
}

/// An example with its files sorted by path; non-UTF-8 files travel as base64.
pub fn example(example: &Example) -> ExampleDto {
    let mut files: Vec<ExampleFileDto> = example
        .files
        .iter()
        .map(|f| match std::str::from_utf8(&f.contents) {
            Ok(text) => ExampleFileDto {
                path: f.path.clone(),
                contents: text.to_owned(),
                contents_base64: None,
            },
            Err(_) => ExampleFileDto {
                path: f.path.clone(),
                contents: String::new(),
                contents_base64: Some(
                    base64::engine::general_purpose::STANDARD.encode(&f.contents),
                ),
            },
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    ExampleDto {
        slug: example.slug.clone(),
        name: example.name.clone(),
        use_when: example.use_when.clone(),
        files,
    }
}
