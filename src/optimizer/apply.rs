//! Applies gradients to a module with the optimizer an [`OptimizerSpec`] names, one
//! parameter at a time.

use super::row_blocks::{cut_record, join_records};
use super::state_shapes::shape_fault;
use super::{param_paths, AnyOptimizer, OptimizerSpec};
use std::collections::BTreeMap;

use burn::module::{Module, ModuleMapper, Param};
use burn::optim::record::AdaptorRecord;
use burn::optim::{GradientsParams, SimpleOptimizer};
use burn::record::{FullPrecisionSettings, Record};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

/// An optimizer whose per-parameter state is keyed by the parameter's dotted path.
///
/// Burn's parameter ids are random per process; paths are stable, so state saved by one
/// process restores into a model built by another, and checkpoints are byte-identical
/// across runs with the same seed.
pub struct Optimizer<B: AutodiffBackend> {
    spec: OptimizerSpec,
    main: AnyOptimizer<B::InnerBackend>,
    part: Option<AnyOptimizer<B::InnerBackend>>,
    states: BTreeMap<String, AdaptorRecord<Rule<B>, B>>,
}

type Rule<B> = AnyOptimizer<<B as AutodiffBackend>::InnerBackend>;
type StateItem<B> = <AdaptorRecord<Rule<B>, B> as Record<B>>::Item<FullPrecisionSettings>;

impl<B: AutodiffBackend> Optimizer<B> {
    /// The optimizer `spec` names, with empty state.
    pub fn new(spec: &OptimizerSpec) -> Self {
        Self {
            spec: spec.clone(),
            main: AnyOptimizer::new(&spec.algorithm),
            part: spec.part.as_ref().map(|p| AnyOptimizer::new(&p.algorithm)),
            states: BTreeMap::new(),
        }
    }

    /// An error when the spec's part names a module that holds none of `model`'s
    /// parameters (a misspelt module would otherwise train nothing with its rule).
    pub fn check_part<M: Module<B>>(&self, model: &M) -> crate::error::Result<()> {
        let Some(part) = &self.spec.part else {
            return Ok(());
        };
        if param_paths::<B, M>(model)
            .values()
            .any(|path| is_under(path, &part.module))
        {
            return Ok(());
        }
        Err(crate::error::Error::Config(format!(
            "optimizer part: module '{}' holds no parameter of the model",
            part.module
        )))
    }

    /// What this optimizer was built from.
    pub fn spec(&self) -> &OptimizerSpec {
        &self.spec
    }

    /// The rule that updates the parameter at `path`, and its rate when the main rule's is
    /// `lr`: the part's base rate scaled as the schedule scales the main one.
    fn rule(&self, path: &str, lr: f64) -> (&Rule<B>, f64) {
        match (&self.spec.part, &self.part) {
            (Some(spec), Some(rule)) if is_under(path, &spec.module) => {
                let base = self.spec.learning_rate;
                let scale = if base > 0.0 { lr / base } else { 1.0 };
                (rule, spec.learning_rate * scale)
            }
            _ => (&self.main, lr),
        }
    }

    /// Applies `grads` to `model` with learning rate `lr`; parameters without a gradient
    /// are left as they are.
    pub fn step<M: Module<B>>(&mut self, lr: f64, model: M, mut grads: GradientsParams) -> M {
        let mut mapper = StepMapper::<B> {
            optimizer: self,
            grads: &mut grads,
            lr,
            stack: Vec::new(),
        };
        model.map(&mut mapper)
    }

    /// The state serialised deterministically (MessagePack, sorted by path).
    pub fn state_bytes(&self) -> crate::error::Result<Vec<u8>> {
        let items: BTreeMap<&String, StateItem<B>> = self
            .states
            .iter()
            .map(|(path, record)| (path, record.clone().into_item::<FullPrecisionSettings>()))
            .collect();
        Ok(rmp_serde::to_vec(&items)?)
    }

    /// Replaces the state with one produced by [`Optimizer::state_bytes`].
    pub fn load_state_bytes(
        &mut self,
        bytes: &[u8],
        device: &B::Device,
    ) -> crate::error::Result<()> {
        self.states.clear();
        self.merge_state_bytes(bytes, device)
    }

    /// What makes the state unfit for the parameters `shape_of` gives the shapes of, if
    /// anything: the first (by path) whose rank or shape differs from its parameter's.
    /// Paths it gives no shape for are left alone (a ps task's blocks). Call it on state
    /// restored from outside (a checkpoint, a chief's): Burn would otherwise panic at the
    /// first step, or broadcast a state of another shape into a wrong one.
    pub fn state_shape_fault(
        &self,
        shape_of: impl Fn(&str) -> Option<Vec<usize>>,
    ) -> Option<String> {
        self.states.iter().find_map(|(path, record)| {
            let shape = shape_of(path)?;
            shape_fault::<B>(path, record, &shape)
        })
    }

    /// Number of parameters that have optimizer state.
    pub fn state_len(&self) -> usize {
        self.states.len()
    }

    /// Applies `grad` to the parameter at `path` — what [`Optimizer::step`] does for each
    /// parameter of a module (a parameter server holds variables, not modules).
    pub fn step_tensor<const D: usize>(
        &mut self,
        lr: f64,
        path: &str,
        tensor: Tensor<B::InnerBackend, D>,
        grad: Tensor<B::InnerBackend, D>,
    ) -> Tensor<B::InnerBackend, D> {
        let state = self
            .states
            .remove(path)
            .map(|record| record.into_state::<D>());
        let (rule, lr) = self.rule(path, lr);
        let (updated, state) = rule.step(lr, tensor, grad, state);
        if let Some(state) = state {
            self.states
                .insert(path.to_string(), AdaptorRecord::from_state(state));
        }
        updated
    }

    /// The state of the parameters `keep` accepts, serialised as [`Optimizer::state_bytes`].
    pub fn state_bytes_of(&self, keep: impl Fn(&str) -> bool) -> crate::error::Result<Vec<u8>> {
        self.state_bytes_in_blocks(keep, |_| None)
    }

    /// [`Optimizer::state_bytes_of`], with the state of each parameter that `blocks` cuts
    /// (into blocks of rows, by name with their rows) as its blocks' under their names,
    /// which `keep` then sees: what parameter servers holding the blocks apart update.
    pub fn state_bytes_in_blocks(
        &self,
        keep: impl Fn(&str) -> bool,
        blocks: impl Fn(&str) -> Option<Vec<(String, usize)>>,
    ) -> crate::error::Result<Vec<u8>> {
        let mut items: BTreeMap<String, StateItem<B>> = BTreeMap::new();
        for (path, record) in &self.states {
            let Some(blocks) = blocks(path) else {
                if keep(path) {
                    items.insert(path.clone(), record.clone().into_item());
                }
                continue;
            };
            if !blocks.iter().any(|(name, _)| keep(name)) {
                continue;
            }
            let rows: Vec<usize> = blocks.iter().map(|(_, rows)| *rows).collect();
            let cut = cut_record::<B>(path, record.clone(), &rows)?;
            for ((name, _), block) in blocks.into_iter().zip(cut) {
                if keep(&name) {
                    items.insert(name, block.into_item());
                }
            }
        }
        Ok(rmp_serde::to_vec(&items)?)
    }

    /// Joins the state of the blocks of the parameter `path` (named `blocks`, in order)
    /// into its own: nothing when no block has state yet, an error when only some have.
    pub fn join_blocks(&mut self, path: &str, blocks: &[String]) -> crate::error::Result<()> {
        let records: Vec<_> = blocks
            .iter()
            .filter_map(|block| self.states.remove(block))
            .collect();
        if records.is_empty() {
            return Ok(());
        }
        if records.len() != blocks.len() {
            return Err(crate::error::Error::Config(format!(
                "the optimizer state of '{path}' came for {} of its {} blocks",
                records.len(),
                blocks.len()
            )));
        }
        let joined = join_records::<B>(path, records)?;
        self.states.insert(path.to_string(), joined);
        Ok(())
    }

    /// Adds the state of [`Optimizer::state_bytes`] to this one (a path in both takes the
    /// added state).
    pub fn merge_state_bytes(
        &mut self,
        bytes: &[u8],
        device: &B::Device,
    ) -> crate::error::Result<()> {
        let items: BTreeMap<String, StateItem<B>> = rmp_serde::from_slice(bytes)?;
        self.states.extend(
            items
                .into_iter()
                .map(|(path, item)| (path, AdaptorRecord::from_item(item, device))),
        );
        Ok(())
    }
}

/// Whether `path` is `module` or inside it (a block of a parameter, `path/part_0`, is
/// inside the parameter).
fn is_under(path: &str, module: &str) -> bool {
    path.strip_prefix(module)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('/'))
}

struct StepMapper<'a, B: AutodiffBackend> {
    optimizer: &'a mut Optimizer<B>,
    grads: &'a mut GradientsParams,
    lr: f64,
    stack: Vec<String>,
}

impl<B: AutodiffBackend> ModuleMapper<B> for StepMapper<'_, B> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let path = self.stack.join(".");
        let require_grad = tensor.is_require_grad();
        let updated = self
            .optimizer
            .step_tensor(self.lr, &path, tensor.inner(), grad);
        let mut updated = Tensor::from_inner(updated);
        if require_grad {
            updated = updated.require_grad();
        }
        Param::from_mapped_value(id, updated, mapper)
    }
}

#[cfg(test)]
mod tests;
