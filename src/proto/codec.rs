//! The codec of every generated service and client: prost's, except that a request message that
//! does not decode is `INVALID_ARGUMENT` with its details (`MALFORMED_MESSAGE`, a `BadRequest`
//! naming the message), where prost's codec says `INTERNAL`, which tells a client the server
//! broke when it was the request.

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use crate::proto::reason::Reason;

/// prost's codec, with decode failures worded as above.
#[derive(Debug, Clone)]
pub struct CheckedCodec<T, U>(ProstCodec<T, U>);

impl<T, U> Default for CheckedCodec<T, U> {
    fn default() -> Self {
        CheckedCodec(ProstCodec::default())
    }
}

impl<T, U> Codec for CheckedCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = CheckedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.0.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder(self.0.decoder())
    }
}

/// prost's decoder, with its failure as [`Reason::MalformedMessage`].
#[derive(Debug, Clone)]
pub struct CheckedDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for CheckedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|status| {
            Reason::MalformedMessage {
                detail: format!(
                    "it is not a protobuf message of the call: {}",
                    status.message()
                ),
            }
            .status()
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
