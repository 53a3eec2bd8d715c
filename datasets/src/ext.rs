//! [`DatasetExt`]: the combinator methods every [`Dataset`] gets.

use crate::combinators::{
    Batch, BatchColumnar, Cache, CacheTable, Concatenate, Filter, FlatMap, Map, ParallelCalls,
    ParallelMap, Prefetch, Repeat, Shard, Shuffle, Skip, Take, TryMap, Unbatch, Zip,
};
use crate::{BoxDataset, ColumnarRow, Dataset, Error, Example};

/// Combinators, available on every [`Dataset`] (`use datasets::DatasetExt;`).
///
/// All of them are lazy: nothing is read until the pipeline is pulled. Errors for bad
/// arguments (`shard(0, 0)`, `batch(0, _)`, `shuffle(0, _)`) are returned by the first
/// pull, so chains need no `?` in between.
pub trait DatasetExt: Dataset + Sized {
    /// Applies `f` to every item.
    fn map<U, F>(self, f: F) -> Map<Self, F>
    where
        U: Send,
        F: FnMut(Self::Item) -> U + Send,
    {
        Map::new(self, f)
    }

    /// Applies a fallible `f` to every item; its errors are passed downstream.
    fn try_map<U, F>(self, f: F) -> TryMap<Self, F>
    where
        U: Send,
        F: FnMut(Self::Item) -> Result<U, Error> + Send,
    {
        TryMap::new(self, f)
    }

    /// Applies `f` to every item on `calls` worker threads, as `tf.data`'s
    /// `map(f, num_parallel_calls=...)`.
    ///
    /// Items come out in input order unless
    /// [`deterministic(false)`](ParallelMap::deterministic) is set, and positions are
    /// those `map` would report, so checkpoints resume exactly; see [`ParallelMap`]. A
    /// panic in `f` is yielded as [`Error::MapPanicked`] in the item's place.
    ///
    /// ```
    /// use datasets::{from_vec, Dataset, DatasetExt, ParallelCalls};
    ///
    /// let rows = vec!["1.5,2".to_string(), "3,4.25".to_string()];
    /// let parse = |row: String| -> Vec<f32> {
    ///     row.split(',').map(|c| c.parse().unwrap()).collect()
    /// };
    /// let mut ds = from_vec(rows).map_parallel(parse, ParallelCalls::Fixed(2));
    /// assert_eq!(ds.next_item().unwrap().unwrap(), vec![1.5, 2.0]);
    /// let saved = ds.position(); // as `map` would report: one row read
    /// assert_eq!(ds.next_item().unwrap().unwrap(), vec![3.0, 4.25]);
    /// ds.restore(&saved).unwrap();
    /// assert_eq!(ds.next_item().unwrap().unwrap(), vec![3.0, 4.25]);
    /// ```
    fn map_parallel<U, F>(self, f: F, calls: ParallelCalls) -> ParallelMap<Self, U>
    where
        Self::Item: 'static,
        U: Send + 'static,
        F: Fn(Self::Item) -> U + Send + Sync + 'static,
    {
        ParallelMap::new(self, move |item| Ok(f(item)), calls)
    }

    /// [`map_parallel`](DatasetExt::map_parallel) with a fallible `f`, whose errors are
    /// yielded in the item's place, as with [`try_map`](DatasetExt::try_map).
    fn try_map_parallel<U, F>(self, f: F, calls: ParallelCalls) -> ParallelMap<Self, U>
    where
        Self::Item: 'static,
        U: Send + 'static,
        F: Fn(Self::Item) -> Result<U, Error> + Send + Sync + 'static,
    {
        ParallelMap::new(self, f, calls)
    }

    /// Replaces each item by the items `f` expands it to (tf.data's `flat_map`); `f` must
    /// expand an item the same way each time, as a restored position reads it again.
    fn flat_map<I, F>(self, f: F) -> FlatMap<Self, F, I::Item>
    where
        I: IntoIterator,
        I::Item: Send,
        F: FnMut(Self::Item) -> I + Send,
    {
        FlatMap::new(self, f)
    }

    /// The items of each batch, one at a time (tf.data's `unbatch`).
    fn unbatch<T: Send>(self) -> Unbatch<Self, T>
    where
        Self: Dataset<Item = Vec<T>>,
    {
        FlatMap::new(self, std::convert::identity as fn(Vec<T>) -> Vec<T>)
    }

    /// Keeps the items for which `predicate` is true.
    fn filter<F>(self, predicate: F) -> Filter<Self, F>
    where
        F: FnMut(&Self::Item) -> bool + Send,
    {
        Filter::new(self, predicate)
    }

    /// Shuffles through a buffer of `buffer_size` items, as `tf.data.Dataset.shuffle`.
    ///
    /// Under [`repeat`](DatasetExt::repeat) every epoch gets a new order derived from
    /// `(seed, epoch)`; the multiset of items per epoch is unchanged.
    fn shuffle(self, buffer_size: usize, seed: u64) -> Shuffle<Self> {
        Shuffle::new(self, buffer_size, seed)
    }

    /// Groups items into `Vec`s of `size`; the last one is shorter unless `drop_remainder`.
    fn batch(self, size: usize, drop_remainder: bool) -> Batch<Self> {
        Batch::new(self, size, drop_remainder)
    }

    /// Groups rows ([`Example`]s or [`TableRow`](crate::TableRow)s) into
    /// [`ColumnarBatch`](crate::ColumnarBatch)es of `size` rows: dense values contiguous
    /// and row-major, one string column per categorical feature, one label column. The
    /// last batch is shorter unless `drop_remainder`.
    ///
    /// A dropped batch gives its buffers back to the stage (from any thread), so the
    /// pipeline allocates nothing per batch once running. Positions are the upstream's,
    /// as with [`batch`](DatasetExt::batch). A row whose number of values or kind of
    /// label differs from its batch's first row is an [`Error::Layout`].
    ///
    /// ```
    /// use datasets::{from_vec, Dataset, DatasetExt, Example, Label, Labels};
    ///
    /// let rows: Vec<Example> = (0..5)
    ///     .map(|i| Example { dense: vec![i as f32, 0.5], label: Label::Class(i % 2), ..Example::default() })
    ///     .collect();
    /// let mut ds = from_vec(rows).batch_columnar(2, false);
    /// let batch = ds.next_item().unwrap()?;
    /// assert_eq!((batch.rows, batch.dense_width), (2, 2));
    /// assert_eq!(batch.dense, [0.0, 0.5, 1.0, 0.5]);
    /// assert_eq!(batch.labels, Labels::Class(vec![0, 1]));
    /// # Ok::<(), datasets::Error>(())
    /// ```
    fn batch_columnar(self, size: usize, drop_remainder: bool) -> BatchColumnar<Self>
    where
        Self::Item: ColumnarRow,
    {
        BatchColumnar::new(self, size, drop_remainder)
    }

    /// Passes over the data `count` times (`None`: forever). An empty upstream ends it.
    fn repeat(self, count: Option<usize>) -> Repeat<Self> {
        Repeat::new(self, count)
    }

    /// The first `n` items.
    fn take(self, n: usize) -> Take<Self> {
        Take::new(self, n)
    }

    /// All but the first `n` items.
    fn skip(self, n: usize) -> Skip<Self> {
        Skip::new(self, n)
    }

    /// Every `num_shards`-th item starting at `index`, as `tf.data.Dataset.shard`.
    fn shard(self, num_shards: usize, index: usize) -> Shard<Self> {
        Shard::new(self, num_shards, index)
    }

    /// Reads up to `buffer` items ahead on a background thread; a `buffer` over 65536 is
    /// an error on the first pull.
    ///
    /// The position is that after the last item delivered to the caller. The thread stops
    /// when the dataset is dropped or restored.
    fn prefetch(self, buffer: usize) -> Prefetch<Self>
    where
        Self: 'static,
    {
        Prefetch::new(self, buffer)
    }

    /// Keeps every item in memory on the first pass and replays them on later passes.
    fn cache(self) -> Cache<Self>
    where
        Self::Item: Clone,
    {
        Cache::new(self)
    }

    /// Like [`cache`](DatasetExt::cache) for [`Example`]s, but keeps them as one columnar
    /// table and yields [`TableRow`](crate::TableRow)s: after the first pass a row is a
    /// shared handle on the table and an index, so `shuffle`, `repeat`, `shard`, `take`
    /// and `prefetch` move rows without allocating, and
    /// [`batch_columnar`](DatasetExt::batch_columnar) copies their values straight from
    /// the table. Positions are `cache`'s and resume exactly; see [`CacheTable`].
    ///
    /// ```
    /// use datasets::{from_vec, Dataset, DatasetExt, Example, Label};
    ///
    /// let rows: Vec<Example> = (0..100)
    ///     .map(|i| Example { dense: vec![i as f32; 4], label: Label::Float(i as f32), ..Example::default() })
    ///     .collect();
    /// let mut ds = from_vec(rows).cache_table().shuffle(100, 7).repeat(Some(3)).batch_columnar(32, false);
    /// let mut seen = 0;
    /// while let Some(batch) = ds.next_item() {
    ///     let batch = batch?;
    ///     assert_eq!(batch.dense_row(0)[0], batch.label(0).to_label().as_f32().unwrap());
    ///     seen += batch.rows;
    /// }
    /// assert_eq!(seen, 300);
    /// # Ok::<(), datasets::Error>(())
    /// ```
    fn cache_table(self) -> CacheTable<Self>
    where
        Self: Dataset<Item = Example>,
    {
        CacheTable::new(self)
    }

    /// Pairs items with those of `other`; ends with the shorter of the two.
    fn zip<O: Dataset>(self, other: O) -> Zip<Self, O> {
        Zip::new(self, other)
    }

    /// The items of this dataset, then those of `other` (tf.data's `concatenate`).
    fn concatenate<O: Dataset<Item = Self::Item>>(self, other: O) -> Concatenate<Self, O> {
        Concatenate::new(self, other)
    }

    /// Boxes the pipeline, erasing its type.
    fn boxed(self) -> BoxDataset<Self::Item>
    where
        Self: 'static,
    {
        Box::new(self)
    }

    /// An iterator over the remaining items (each a `Result`).
    fn iter(&mut self) -> Iter<'_, Self> {
        Iter { dataset: self }
    }
}

impl<D: Dataset> DatasetExt for D {}

/// Iterator over a dataset's remaining items, from [`DatasetExt::iter`].
#[derive(Debug)]
pub struct Iter<'a, D> {
    dataset: &'a mut D,
}

impl<D: Dataset> Iterator for Iter<'_, D> {
    type Item = Result<D::Item, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.dataset.next_item()
    }
}
