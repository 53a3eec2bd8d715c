//! A module's parameters as plain `f32` values by dotted path, and back: what parameter
//! servers hold and training tasks pull.

use std::collections::BTreeMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use crate::error::{Error, Result};

/// Every float parameter's shape and values, by dotted path (the optimizer's keys).
pub fn parameter_values<B: Backend, M: Module<B>>(
    model: &M,
) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    parameter_values_where(model, |_| true)
}

/// [`parameter_values`] of the paths `wanted` keeps; the others are not read.
pub fn parameter_values_where<B: Backend, M: Module<B>>(
    model: &M,
    wanted: impl Fn(&str) -> bool,
) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    read(model, wanted, false)
}

/// The shapes and values of the float parameters on the paths `wanted` keeps; with
/// `untrained_only`, only of those no gradient trains.
fn read<B: Backend, M: Module<B>>(
    model: &M,
    wanted: impl Fn(&str) -> bool,
    untrained_only: bool,
) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let mut reader = Reader {
        stack: Vec::new(),
        wanted,
        untrained_only,
        out: BTreeMap::new(),
    };
    model.visit(&mut reader);
    reader.out
}

/// Every float parameter's shape, by dotted path; no value is read.
pub fn parameter_shapes<B: Backend, M: Module<B>>(model: &M) -> BTreeMap<String, Vec<usize>> {
    let mut reader = Shapes {
        stack: Vec::new(),
        out: BTreeMap::new(),
    };
    model.visit(&mut reader);
    reader.out
}

struct Shapes {
    stack: Vec<String>,
    out: BTreeMap<String, Vec<usize>>,
}

impl<B: Backend> ModuleVisitor<B> for Shapes {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let shape = param.lazy_shape().dims::<D>().to_vec();
        self.out.insert(self.stack.join("."), shape);
    }
}

/// The values of the float tensors no gradient trains (batch normalisation's running
/// statistics, frozen parameters), by dotted path, as the last forward pass left them;
/// trained parameters are not read.
pub fn untrained_values<B: Backend, M: Module<B>>(model: &M) -> BTreeMap<String, Vec<f32>> {
    untrained_values_where(model, |_| true)
}

/// [`untrained_values`] of the paths `wanted` keeps; the others are not read.
pub fn untrained_values_where<B: Backend, M: Module<B>>(
    model: &M,
    wanted: impl Fn(&str) -> bool,
) -> BTreeMap<String, Vec<f32>> {
    // Burn's `RunningState` keeps the forward pass's update aside until it is synced (as a
    // record is taken), and is read one update behind before: the clone shares that state,
    // so this syncs `model`'s.
    drop(model.clone().into_record());
    read(model, wanted, true)
        .into_iter()
        .map(|(path, (_, values))| (path, values))
        .collect()
}

/// The CRC-32C of `values`' bits: whether a value changed, without keeping a copy.
pub fn values_crc32c(values: &[f32]) -> u32 {
    crc32c::crc32c(bytemuck::cast_slice(values))
}

/// `model` with the parameters named in `values` replaced by them (shapes kept); a value
/// count that does not fit its parameter is an error naming it.
pub fn load_values<B: Backend, M: Module<B>>(
    model: M,
    values: &mut BTreeMap<String, Vec<f32>>,
) -> Result<M> {
    let mut writer = Writer {
        stack: Vec::new(),
        values,
        error: None,
    };
    let model = model.map(&mut writer);
    match writer.error {
        Some(error) => Err(error),
        None => Ok(model),
    }
}

struct Reader<F> {
    stack: Vec<String>,
    wanted: F,
    untrained_only: bool,
    out: BTreeMap<String, (Vec<usize>, Vec<f32>)>,
}

impl<B: Backend, F: Fn(&str) -> bool> ModuleVisitor<B> for Reader<F> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let path = self.stack.join(".");
        if !(self.wanted)(&path) {
            return;
        }
        let tensor = param.val();
        if self.untrained_only && tensor.is_require_grad() {
            return;
        }
        let shape = tensor.shape().dims::<D>().to_vec();
        let values = tensor
            .into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .unwrap_or_default();
        self.out.insert(path, (shape, values));
    }
}

struct Writer<'a> {
    stack: Vec<String>,
    values: &'a mut BTreeMap<String, Vec<f32>>,
    error: Option<Error>,
}

impl<B: Backend> ModuleMapper<B> for Writer<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let path = self.stack.join(".");
        let Some(values) = self.values.remove(&path) else {
            return param;
        };
        let (id, tensor, mapper) = param.consume();
        let shape = tensor.shape();
        if shape.num_elements() != values.len() {
            self.error.get_or_insert(Error::Config(format!(
                "parameter '{path}' of shape {:?} cannot take {} values",
                shape.dims::<D>(),
                values.len()
            )));
            return Param::from_mapped_value(id, tensor, mapper);
        }
        let require_grad = tensor.is_require_grad();
        let mut loaded = Tensor::from_data(TensorData::new(values, shape), &tensor.device());
        if require_grad {
            loaded = loaded.require_grad();
        }
        Param::from_mapped_value(id, loaded, mapper)
    }
}
