//! Large variables cut into blocks of rows that the ps tasks hold apart: TF's
//! `MinSizePartitioner` (TF 1's `min_max_variable_partitioner`).
//!
//! Without it a ps holds whole variables, and the largest one decides how much one ps
//! serves and updates per step however many ps tasks there are. Each block is a variable
//! of its own on the ps tasks, named `path/part_i` as TF names them, that the placement
//! spreads like any other; training tasks cut gradients into the blocks and join pulled
//! blocks back, and checkpoints hold whole variables, so a run restores with another
//! partitioning, another number of ps tasks, or none.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::messages::Shaped;
use crate::error::{Error, Result};

/// Cuts a variable along its first axis into as many blocks as its bytes hold
/// `min_shard_bytes` (rounded up), at most `max_shards` (default: the number of ps tasks)
/// and at most its rows; blocks differ by one row at most, the first ones larger. Set in
/// [`RunConfig::variable_partitioner`](crate::RunConfig).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinSizePartitioner {
    /// The smallest block worth a variable of its own, in bytes (TF's default: 256 KiB).
    pub min_shard_bytes: u64,
    /// The most blocks one variable is cut into; the number of ps tasks when unset.
    #[serde(default)]
    pub max_shards: Option<usize>,
}

impl MinSizePartitioner {
    /// TF's default block: 256 KiB.
    pub const DEFAULT_MIN_SHARD_BYTES: u64 = 256 << 10;

    /// Blocks of at least `min_shard_bytes`, at most one per ps task.
    pub fn new(min_shard_bytes: u64) -> Self {
        Self {
            min_shard_bytes,
            max_shards: None,
        }
    }

    /// The number of blocks a variable of `shape` (f32) is cut into with `num_ps` ps tasks.
    pub fn shards(&self, shape: &[usize], num_ps: usize) -> usize {
        let Some(&rows) = shape.first() else {
            return 1;
        };
        let bytes = shape.iter().product::<usize>() as u64 * 4;
        let wanted = bytes.div_ceil(self.min_shard_bytes.max(1));
        let most = self.max_shards.unwrap_or(num_ps).max(1);
        (wanted.min(most as u64) as usize).min(rows).max(1)
    }
}

/// The name the block `index` of variable `path` has on the ps tasks.
pub fn part_name(path: &str, index: usize) -> String {
    format!("{path}/part_{index}")
}

/// How each partitioned variable of a model is cut: rows per block, values per row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Partitions {
    cuts: BTreeMap<String, Cut>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cut {
    rows: Vec<usize>,
    row_len: usize,
}

impl Cut {
    fn len(&self, block: usize) -> usize {
        self.rows[block] * self.row_len
    }

    fn offset(&self, block: usize) -> usize {
        self.rows[..block].iter().sum::<usize>() * self.row_len
    }
}

impl Partitions {
    /// The cuts `partitioner` makes of the variables of `shapes` on `num_ps` ps tasks; none
    /// without one.
    pub fn new(
        partitioner: Option<MinSizePartitioner>,
        shapes: &BTreeMap<String, Vec<usize>>,
        num_ps: usize,
    ) -> Self {
        let Some(partitioner) = partitioner else {
            return Self::default();
        };
        let cuts = shapes
            .iter()
            .filter_map(|(path, shape)| {
                let blocks = partitioner.shards(shape, num_ps);
                if blocks < 2 {
                    return None;
                }
                let (total, row_len) = (shape[0], shape[1..].iter().product());
                let rows = (0..blocks)
                    .map(|i| total / blocks + usize::from(i < total % blocks))
                    .collect();
                Some((path.clone(), Cut { rows, row_len }))
            })
            .collect();
        Self { cuts }
    }

    /// The blocks of `path`, by name with their rows; `None` for a whole variable.
    pub fn blocks_of(&self, path: &str) -> Option<Vec<(String, usize)>> {
        let cut = self.cuts.get(path)?;
        Some(
            cut.rows
                .iter()
                .enumerate()
                .map(|(i, &rows)| (part_name(path, i), rows))
                .collect(),
        )
    }

    /// Variables with their shapes, the partitioned ones as their blocks.
    pub fn cut_shaped(&self, variables: Shaped) -> Shaped {
        let mut out = Shaped::new();
        for (path, (shape, values)) in variables {
            let Some(cut) = self.cuts.get(&path) else {
                out.insert(path, (shape, values));
                continue;
            };
            for (i, block) in cut_values(cut, &values).enumerate() {
                let mut block_shape = shape.clone();
                block_shape[0] = cut.rows[i];
                out.insert(part_name(&path, i), (block_shape, block));
            }
        }
        out
    }

    /// Values (or gradients) by path, the partitioned ones as their blocks; a value count
    /// that does not fit its variable is an error naming it.
    pub fn cut(
        &self,
        values: impl IntoIterator<Item = (String, Vec<f32>)>,
    ) -> Result<Vec<(String, Vec<f32>)>> {
        let mut out = Vec::new();
        for (path, values) in values {
            let Some(cut) = self.cuts.get(&path) else {
                out.push((path, values));
                continue;
            };
            let whole = cut.offset(cut.rows.len());
            if values.len() != whole {
                return Err(misfit(&path, whole, values.len()));
            }
            // Blocks split off the end, the first one the values' own buffer: one copy
            // fewer of a large variable every step.
            let mut values = values;
            let mut blocks: Vec<(String, Vec<f32>)> = (1..cut.rows.len())
                .rev()
                .map(|i| (part_name(&path, i), values.split_off(cut.offset(i))))
                .collect();
            blocks.push((part_name(&path, 0), values));
            out.extend(blocks.into_iter().rev());
        }
        Ok(out)
    }

    /// Pulled values by name, blocks joined into their variables. A variable only some of
    /// whose blocks came (the others did not change) takes them into its `current` values,
    /// which `current` reads for the paths it is given.
    pub fn join(
        &self,
        values: BTreeMap<String, Vec<f32>>,
        current: impl FnOnce(&BTreeSet<String>) -> BTreeMap<String, Vec<f32>>,
    ) -> Result<BTreeMap<String, Vec<f32>>> {
        if self.cuts.is_empty() {
            return Ok(values);
        }
        let mut out = BTreeMap::new();
        let mut blocks: BTreeMap<String, BTreeMap<usize, Vec<f32>>> = BTreeMap::new();
        for (name, block) in values {
            match self.block_of(&name) {
                Some((path, i)) => {
                    let cut = &self.cuts[path];
                    if block.len() != cut.len(i) {
                        return Err(misfit(&name, cut.len(i), block.len()));
                    }
                    blocks.entry(path.to_string()).or_default().insert(i, block);
                }
                None => {
                    out.insert(name, block);
                }
            }
        }
        let partial: BTreeSet<String> = blocks
            .iter()
            .filter(|(path, came)| came.len() < self.cuts[*path].rows.len())
            .map(|(path, _)| path.clone())
            .collect();
        let mut held = if partial.is_empty() {
            BTreeMap::new()
        } else {
            current(&partial)
        };
        for (path, came) in blocks {
            let cut = &self.cuts[&path];
            let whole = cut.offset(cut.rows.len());
            let joined = if partial.contains(&path) {
                let mut values = held.remove(&path).ok_or_else(|| {
                    Error::Config(format!(
                        "variable '{path}': some of its blocks came from the ps tasks, and \
                         the model has no values to put them into"
                    ))
                })?;
                if values.len() != whole {
                    return Err(misfit(&path, whole, values.len()));
                }
                for (i, block) in came {
                    values[cut.offset(i)..cut.offset(i) + block.len()].copy_from_slice(&block);
                }
                values
            } else {
                // The first block's buffer grows to hold the others (glibc remaps a large
                // one rather than copy it).
                let mut blocks = came.into_values();
                let mut values = blocks.next().unwrap_or_default();
                values.reserve_exact(whole - values.len());
                blocks.for_each(|block| values.extend(block));
                values
            };
            out.insert(path, joined);
        }
        Ok(out)
    }

    /// Every cut variable with the names of its blocks, in order.
    pub fn blocks(&self) -> impl Iterator<Item = (String, Vec<String>)> + '_ {
        self.cuts.iter().map(|(path, cut)| {
            let names = (0..cut.rows.len()).map(|i| part_name(path, i)).collect();
            (path.clone(), names)
        })
    }

    /// The variable and index of the block named `name`, when it is one of these cuts'.
    fn block_of<'a>(&'a self, name: &str) -> Option<(&'a str, usize)> {
        let (path, index) = name.rsplit_once("/part_")?;
        let (path, cut) = self.cuts.get_key_value(path)?;
        let index: usize = index.parse().ok()?;
        (index < cut.rows.len()).then_some((path.as_str(), index))
    }
}

fn cut_values<'a>(cut: &'a Cut, values: &'a [f32]) -> impl Iterator<Item = Vec<f32>> + 'a {
    (0..cut.rows.len()).map(|i| values[cut.offset(i)..cut.offset(i) + cut.len(i)].to_vec())
}

fn misfit(name: &str, expected: usize, got: usize) -> Error {
    Error::Config(format!(
        "variable '{name}' holds {expected} values, and {got} came for it"
    ))
}

#[cfg(test)]
mod tests;
