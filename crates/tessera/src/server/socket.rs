//! The byte streams a client connects over: TCP, a Unix domain socket, or
//! TLS over TCP (`server/tls.rs`). A connection's code is generic over
//! [`ClientSocket`], so all three run the same read, dispatch and write
//! path.

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::task::{Context, Poll};

use bytes::BufMut;
use tokio::io::{AsyncRead, AsyncWrite, Interest};

/// What the connection code needs of a socket beyond reading and writing:
/// non-blocking reads that manage tokio's readiness (see
/// `conn::read_available`), and waiting for input without reading it.
pub trait ClientSocket: AsyncRead + AsyncWrite + AsRawFd + Unpin + Send + 'static {
    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
    fn try_read_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize>;
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send;
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send;
    /// Sends what an earlier `try_write` took but could not send yet (TLS
    /// records); WouldBlock while some remains. Plain sockets hold nothing.
    fn try_flush(&self) -> io::Result<()> {
        Ok(())
    }
    /// The connection's TLS state, for those that read its socket directly
    /// (the busy-script pump).
    fn tls_session(&self) -> Option<std::sync::Arc<super::tls::TlsSession>> {
        None
    }
}

macro_rules! client_socket {
    ($stream:ty) => {
        impl ClientSocket for $stream {
            fn try_io<R>(
                &self,
                interest: Interest,
                f: impl FnOnce() -> io::Result<R>,
            ) -> io::Result<R> {
                <$stream>::try_io(self, interest, f)
            }
            fn try_read_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
                <$stream>::try_read_buf(self, buf)
            }
            fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                <$stream>::poll_read_ready(self, cx)
            }
            fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
                <$stream>::try_write(self, buf)
            }
            fn readable(&self) -> impl Future<Output = io::Result<()>> + Send {
                <$stream>::readable(self)
            }
            fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
                <$stream>::writable(self)
            }
        }
    };
}

client_socket!(tokio::net::TcpStream);
client_socket!(tokio::net::UnixStream);
