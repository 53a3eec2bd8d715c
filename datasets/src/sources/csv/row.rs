//! One CSV row into an [`Example`]: where each column goes, and the parsing of its cells.

use crate::sources::reader::Record;
use crate::sources::{cell, text};
use crate::{Error, Example, Label, Schema};

/// Where one schema column's value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    DenseFloat,
    DenseInt,
    Categorical,
    LabelFloat,
    LabelClass,
    LabelName,
}

pub(super) struct Slot {
    /// Index of the column in the schema (for its name in errors).
    pub(super) column: usize,
    /// 1-based position of the column in the file (for errors).
    pub(super) field: usize,
    /// Index in `dense` or `categorical`.
    pub(super) out: usize,
    pub(super) target: Target,
    pub(super) default: Option<Box<[u8]>>,
}

/// How the fields of a record become an [`Example`]: shared (in an `Arc`) by the
/// dataset and, when parsing is split across threads, by the workers.
pub(super) struct RowParser {
    /// The file, as given when it was opened (for error messages).
    pub(super) file: String,
    pub(super) schema: Schema,
    pub(super) slots: Vec<Slot>,
    /// For each field of the file, the slot reading it.
    pub(super) by_field: Vec<Option<usize>>,
    pub(super) fields: usize,
    pub(super) num_dense: usize,
    pub(super) num_categorical: usize,
    pub(super) delimiter: u8,
}

impl RowParser {
    fn blank(&self) -> Example {
        Example {
            dense: vec![0.0; self.num_dense],
            categorical: vec![String::new(); self.num_categorical],
            label: Label::None,
        }
    }

    fn ragged(&self, line: u64, found: usize) -> Error {
        Error::RaggedRow {
            file: self.file.clone(),
            line,
            expected: self.fields,
            found,
        }
    }

    pub(super) fn parse(&self, record: &Record<'_>, line: u64) -> Result<Example, Error> {
        match *record {
            Record::Line(text) => self.parse_line(text, line),
            Record::Fields { .. } => {
                let fields = record.fields(self.delimiter);
                if fields.len() != self.fields {
                    return Err(self.ragged(line, fields.len()));
                }
                let mut example = self.blank();
                for (field, raw) in fields.into_iter().enumerate() {
                    if let Some(s) = self.by_field[field] {
                        self.cell(&self.slots[s], raw, line, &mut example)?;
                    }
                }
                Ok(example)
            }
        }
    }

    /// A quote-free line: fields are found while numbers are parsed, in one pass.
    fn parse_line(&self, text: &[u8], line: u64) -> Result<Example, Error> {
        let mut example = self.blank();
        let d = self.delimiter;
        let mut cur = 0;
        for field in 0..self.fields {
            let rest = &text[cur..];
            let slot = self.by_field[field].map(|s| &self.slots[s]);
            let mut end = None;
            if let Some(slot) = slot.filter(|s| s.target == Target::DenseFloat) {
                if let Some((v, used)) = cell::parse_decimal_prefix(rest) {
                    if rest.get(used).is_none_or(|&b| b == d) {
                        example.dense[slot.out] = v;
                        end = Some(cur + used);
                    }
                }
            }
            let end = match end {
                Some(end) => end,
                None => {
                    let end = memchr::memchr(d, rest).map_or(text.len(), |i| cur + i);
                    if let Some(slot) = slot {
                        self.cell(slot, &text[cur..end], line, &mut example)?;
                    }
                    end
                }
            };
            if field + 1 < self.fields {
                if end >= text.len() {
                    return Err(self.ragged(line, field + 1));
                }
                cur = end + 1;
            } else if end < text.len() {
                let extra = memchr::memchr_iter(d, &text[end + 1..]).count() + 1;
                return Err(self.ragged(line, self.fields + extra));
            }
        }
        Ok(example)
    }

    fn cell(&self, slot: &Slot, raw: &[u8], line: u64, example: &mut Example) -> Result<(), Error> {
        let text: &[u8] = if cell::trim(raw).is_empty() {
            match (&slot.default, slot.target) {
                (Some(d), _) => d,
                (None, Target::Categorical) => raw,
                (None, _) => {
                    return Err(Error::EmptyValue {
                        file: self.file.clone(),
                        line,
                        column: self.schema.columns[slot.column].name.clone(),
                    })
                }
            }
        } else {
            raw
        };
        let name = || self.schema.columns[slot.column].name.as_str();
        let utf8 = |bytes| {
            text::utf8(
                cell::trim(bytes),
                &self.file,
                line,
                Some(name()),
                slot.field,
            )
        };
        let bad = || {
            // A number that is not UTF-8 is most likely text in another encoding: say so.
            if let Err(e) = utf8(raw) {
                return e;
            }
            let c = &self.schema.columns[slot.column];
            let is_label = matches!(
                slot.target,
                Target::LabelFloat | Target::LabelClass | Target::LabelName
            );
            Error::Parse {
                file: self.file.clone(),
                line,
                column: c.name.clone(),
                value: crate::error::excerpt(raw),
                expected: cell::expected_name(c.kind, is_label),
            }
        };
        match slot.target {
            Target::DenseFloat => {
                example.dense[slot.out] = cell::parse_f32(text).ok_or_else(bad)?
            }
            Target::DenseInt => {
                example.dense[slot.out] = cell::parse_i64(text).ok_or_else(bad)? as f32;
            }
            Target::Categorical => example.categorical[slot.out] = utf8(text)?.to_owned(),
            Target::LabelFloat => {
                example.label = Label::Float(cell::parse_f32(text).ok_or_else(bad)?);
            }
            Target::LabelClass => {
                let label = cell::parse_class(text).ok_or_else(bad)?;
                if let Some(classes) = self.schema.label_classes.filter(|&n| label >= n) {
                    return Err(Error::LabelOutOfRange {
                        file: self.file.clone(),
                        line,
                        column: self.schema.columns[slot.column].name.clone(),
                        label,
                        classes,
                    });
                }
                example.label = Label::Class(label);
            }
            Target::LabelName => example.label = Label::Name(utf8(text)?.to_owned()),
        }
        Ok(())
    }
}
