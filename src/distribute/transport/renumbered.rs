//! A transport seen with its ranks renumbered: what lets a collective run in another order
//! than the ranks' (the ring in [`host_order`](crate::distribute::ring_order_by_host)'s)
//! without knowing it.

use super::{Lent, Onward, Transport};
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// `inner` with rank `order[p]` seen as rank `p`: all of its ranks, or a subset of them
/// as a world of its own. Faults name ranks as `inner` numbers them, those a collective
/// raises about a message included, so that errors name the right task.
pub struct Renumbered<'a, T: Transport + ?Sized> {
    inner: &'a mut T,
    order: &'a [usize],
    position: usize,
    world_size: usize,
}

impl<'a, T: Transport + ?Sized> Renumbered<'a, T> {
    /// `inner` renumbered by `order`, a permutation of its ranks (position → rank); one of
    /// another length, or that is no permutation, leaves the numbers as they are.
    pub fn new(inner: &'a mut T, order: &'a [usize]) -> Self {
        let n = inner.world_size();
        let mut seen = vec![false; n];
        let permutation = order.len() == n
            && order
                .iter()
                .all(|&r| r < n && !std::mem::replace(&mut seen[r], true));
        let order = if permutation { order } else { &[] };
        let me = inner.rank();
        let position = order.iter().position(|&r| r == me).unwrap_or(me);
        Self {
            inner,
            order,
            position,
            world_size: n,
        }
    }

    /// The world of `inner`'s ranks `members` (distinct, this rank among them), `members[p]`
    /// seen as rank `p`: what a collective among some ranks runs on.
    pub fn subset(inner: &'a mut T, members: &'a [usize]) -> Result<Self> {
        let (n, me) = (inner.world_size(), inner.rank());
        let mut seen = vec![false; n];
        let distinct = (members.iter()).all(|&r| r < n && !std::mem::replace(&mut seen[r], true));
        let position = members.iter().position(|&r| r == me);
        match position.filter(|_| distinct) {
            Some(position) => Ok(Self {
                inner,
                order: members,
                position,
                world_size: members.len(),
            }),
            None => Err(CollectiveFault::invalid(format!(
                "ranks {members:?} of {n} are no world for rank {me}"
            ))),
        }
    }

    /// The rank `inner` knows as `position`.
    fn rank_of(&self, position: usize) -> usize {
        rank_at(self.order, position)
    }
}

/// The rank at `position` of `order` (no order: the same number); beyond it, a rank no
/// transport has, for `inner` to refuse.
fn rank_at(order: &[usize], position: usize) -> usize {
    match order.is_empty() {
        true => position,
        false => order.get(position).copied().unwrap_or(usize::MAX),
    }
}

/// `fault` (raised by a collective that numbers ranks by position) naming ranks as `order`
/// maps them.
fn renamed(order: &[usize], fault: CollectiveFault) -> CollectiveFault {
    match fault {
        CollectiveFault::Peer { rank, message } => CollectiveFault::Peer {
            rank: order.get(rank).copied().unwrap_or(rank),
            message,
        },
        CollectiveFault::Refused { rank, message } => CollectiveFault::Refused {
            rank: order.get(rank).copied().unwrap_or(rank),
            message,
        },
        CollectiveFault::Address { rank, source } => CollectiveFault::Address {
            rank: order.get(rank).copied().unwrap_or(rank),
            source,
        },
        other => other,
    }
}

impl<T: Transport + ?Sized> Transport for Renumbered<'_, T> {
    fn rank(&self) -> usize {
        self.position
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        self.inner.send(self.rank_of(to), tag, payload)
    }

    fn send_filled(
        &mut self,
        to: usize,
        tag: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        self.inner.send_filled(self.rank_of(to), tag, len, fill)
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u8>> {
        self.inner.recv(self.rank_of(from), tag)
    }

    fn recv_lent(
        &mut self,
        from: usize,
        tag: u64,
        consume: &mut dyn FnMut(Lent<'_>) -> Result<()>,
    ) -> Result<()> {
        let order = self.order;
        let mut consume = |lent: Lent<'_>| consume(lent).map_err(|e| renamed(order, e));
        self.inner
            .recv_lent(rank_at(order, from), tag, &mut consume)
    }

    fn recv_and_send_filled(
        &mut self,
        from: usize,
        tag: u64,
        onward: Onward,
        check: &mut dyn FnMut(Lent<'_>) -> Result<()>,
        fill: &mut dyn FnMut(Lent<'_>, &mut [u8]),
    ) -> Result<()> {
        let order = self.order;
        let mut check = |lent: Lent<'_>| check(lent).map_err(|e| renamed(order, e));
        let onward = Onward {
            to: rank_at(order, onward.to),
            ..onward
        };
        (self.inner).recv_and_send_filled(rank_at(order, from), tag, onward, &mut check, fill)
    }

    fn abandon(&mut self) {
        self.inner.abandon();
    }

    fn take_stalled_tasks(&mut self) -> usize {
        self.inner.take_stalled_tasks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribute::InMemoryTransport;

    #[test]
    fn positions_reach_the_ranks_they_stand_for_and_faults_name_those_ranks() {
        let mut cluster = InMemoryTransport::cluster(3).into_iter();
        let (mut zero, mut one, mut two) = (
            cluster.next().unwrap(),
            cluster.next().unwrap(),
            cluster.next().unwrap(),
        );
        let order = [0, 2, 1];
        let mut view = Renumbered::new(&mut zero, &order);
        assert_eq!((view.rank(), view.world_size()), (0, 3));
        view.send(2, 7, vec![1]).unwrap();
        assert_eq!(one.recv(0, 7).unwrap(), [1], "position 2 is rank 1");
        two.send(0, 8, vec![2]).unwrap();
        let mut blame_the_sender = |_: Lent<'_>| Err(CollectiveFault::peer(1, "bad length"));
        let fault = view.recv_lent(1, 8, &mut blame_the_sender).unwrap_err();
        assert!(
            matches!(&fault, CollectiveFault::Peer { rank: 2, .. }),
            "position 1 is rank 2: {fault}"
        );
        let on_two = Renumbered::new(&mut two, &order);
        assert_eq!(on_two.rank(), 1);
        assert_eq!(
            Renumbered::new(&mut one, &[0, 0, 1]).rank(),
            1,
            "no permutation"
        );
    }
}
