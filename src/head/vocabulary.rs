//! Turning labels (ids, numbers, strings) into class ids.

use datasets::LabelRef;

use super::label_fault::LabelFault;
use crate::error::{Error, Result};

/// The class id of `label` among `n_classes`, looking strings up in `vocabulary`.
pub fn class_id(
    label: LabelRef<'_>,
    n_classes: usize,
    vocabulary: Option<&[String]>,
) -> Result<i64> {
    let id = match (label, vocabulary) {
        (LabelRef::Name(name), Some(vocab)) => {
            vocab.iter().position(|v| v == name).ok_or_else(|| {
                Error::Label(LabelFault::NotInVocabulary {
                    name: name.to_string(),
                    vocabulary: vocab.to_vec(),
                })
            })?
        }
        (LabelRef::Name(name), None) => {
            return Err(Error::Label(LabelFault::NoVocabulary {
                name: name.to_string(),
            }))
        }
        (LabelRef::Class(c), _) => c as usize,
        (LabelRef::Float(v), _) if v.fract() == 0.0 && v >= 0.0 => v as usize,
        (LabelRef::Float(v), _) => {
            return Err(Error::Label(LabelFault::NotAClassId {
                value: v,
                n_classes,
            }))
        }
        (LabelRef::None, _) => return Err(Error::Label(LabelFault::Missing)),
    };
    if id >= n_classes {
        return Err(Error::Label(LabelFault::OutOfRange { id, n_classes }));
    }
    Ok(id as i64)
}

/// Class names: the vocabulary, or the ids as strings.
pub fn class_names(n_classes: usize, vocabulary: Option<&[String]>) -> Vec<String> {
    match vocabulary {
        Some(vocab) => vocab.to_vec(),
        None => (0..n_classes).map(|i| i.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_numbers_and_strings_map_to_class_ids_or_clear_errors() {
        let vocab = vec!["setosa".to_string(), "virginica".to_string()];
        assert_eq!(class_id(LabelRef::Class(1), 3, None).unwrap(), 1);
        assert_eq!(class_id(LabelRef::Float(2.0), 3, None).unwrap(), 2);
        assert_eq!(
            class_id(LabelRef::Name("virginica"), 2, Some(&vocab)).unwrap(),
            1
        );
        let err = class_id(LabelRef::Name("rose"), 2, Some(&vocab)).unwrap_err();
        assert!(err.to_string().contains("'rose'"), "{err}");
        assert!(class_id(LabelRef::Class(3), 3, None)
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(class_id(LabelRef::Float(0.5), 3, None).is_err());
        assert_eq!(class_names(2, None), ["0", "1"]);
    }
}
