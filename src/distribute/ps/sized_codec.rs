//! The parameter servers' gRPC codec: prost's, except that a message's whole encoded length
//! is reserved before it is written.
//!
//! tonic's encode buffer starts at 8 KiB and grows as prost writes into it: a 64 MiB
//! variable's values grow it to their length plus what came before them, and the next field
//! then doubles it to 128 MiB, a block the C library maps afresh, remaps and unmaps on every
//! pull and push. Reserved once, the buffer has one size per message, which
//! [`KeepLargeBlocks`](crate::host_heap::KeepLargeBlocks) keeps from step to step.

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::Status;
use tonic_prost::{ProstCodec, ProstDecoder};

/// A [`Codec`] of `application/grpc+proto` messages, through prost, reserving each encoded
/// message's length first; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct SizedProstCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for SizedProstCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for SizedProstCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = SizedEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        SizedEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(BufferSettings::default())
    }
}

/// Encodes a `T` into a buffer reserved for its whole length.
#[derive(Debug, Clone)]
pub struct SizedEncoder<T>(PhantomData<T>);

impl<T: Message> Encoder for SizedEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.reserve(item.encoded_len());
        item.encode(buf)
            .map_err(|e| Status::internal(format!("encoding a ps message: {e}")))
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

#[cfg(test)]
mod tests;
