//! The raw-TCP ring the bench measures the crate's transports against: a minimal
//! [`Transport`] of one plain `TcpStream` per pair of ranks.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::Duration;

use estimator::distribute::{CollectiveFault, Result, Transport};

/// A message between the threads of a `TcpTransport`.
type Message = (u64, Vec<u8>);

/// The raw-TCP baseline: one socket per pair of ranks; per peer a writer thread (so `send`
/// never blocks) and a reader thread feeding an inbox; messages are a 16-byte header (tag,
/// length) and the payload, read straight into its own vector.
pub struct TcpTransport {
    rank: usize,
    world_size: usize,
    outboxes: Vec<Option<Sender<Message>>>,
    inboxes: Vec<Option<Receiver<Message>>>,
    early: Vec<HashMap<u64, VecDeque<Vec<u8>>>>,
}

impl TcpTransport {
    pub fn cluster(n: usize) -> Vec<TcpTransport> {
        let mut ranks: Vec<TcpTransport> = (0..n)
            .map(|rank| TcpTransport {
                rank,
                world_size: n,
                outboxes: (0..n).map(|_| None).collect(),
                inboxes: (0..n).map(|_| None).collect(),
                early: (0..n).map(|_| HashMap::new()).collect(),
            })
            .collect();
        for a in 0..n {
            for b in a + 1..n {
                let (sa, sb) = stream_pair();
                sb.set_nodelay(true).unwrap();
                ranks[a].attach(b, sa);
                ranks[b].attach(a, sb);
            }
        }
        ranks
    }

    fn attach(&mut self, peer: usize, stream: TcpStream) {
        let (out_tx, out_rx) = channel::<Message>();
        let (in_tx, in_rx) = channel::<Message>();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = stream;
        thread::spawn(move || {
            for (tag, payload) in out_rx {
                let mut header = [0u8; 16];
                header[..8].copy_from_slice(&tag.to_le_bytes());
                header[8..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
                if writer.write_all(&header).is_err() || writer.write_all(&payload).is_err() {
                    return;
                }
            }
            // The transport is gone: end the peer's reader.
            let _ = writer.shutdown(Shutdown::Write);
        });
        thread::spawn(move || loop {
            let mut header = [0u8; 16];
            if reader.read_exact(&mut header).is_err() {
                return;
            }
            let tag = u64::from_le_bytes(header[..8].try_into().unwrap());
            let len = u64::from_le_bytes(header[8..].try_into().unwrap()) as usize;
            // Read into spare capacity: no zeroing, no copy.
            let mut payload = Vec::with_capacity(len);
            if (&mut reader)
                .take(len as u64)
                .read_to_end(&mut payload)
                .is_err()
                || payload.len() != len
                || in_tx.send((tag, payload)).is_err()
            {
                return;
            }
        });
        self.outboxes[peer] = Some(out_tx);
        self.inboxes[peer] = Some(in_rx);
    }
}

impl Transport for TcpTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        self.outboxes[to]
            .as_ref()
            .unwrap()
            .send((tag, payload))
            .map_err(|_| CollectiveFault::peer(to, "writer gone"))
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u8>> {
        if let Some(payload) = self.early[from].get_mut(&tag).and_then(VecDeque::pop_front) {
            return Ok(payload);
        }
        let inbox = self.inboxes[from].as_ref().unwrap();
        loop {
            match inbox.recv_timeout(Duration::from_secs(120)) {
                Ok((t, payload)) if t == tag => return Ok(payload),
                Ok((t, payload)) => self.early[from].entry(t).or_default().push_back(payload),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CollectiveFault::peer(from, "timeout"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CollectiveFault::peer(from, "reader gone"))
                }
            }
        }
    }
}

/// A connected pair of sockets: (the writing end, the reading end).
pub fn stream_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let writer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (reader, _) = listener.accept().unwrap();
    writer.set_nodelay(true).unwrap();
    (writer, reader)
}
