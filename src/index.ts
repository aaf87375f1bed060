// iolab's public API: what `import ... from 'iolab'` gives (the package's exports map points
// here), written down once; docs/api.md is its reference. Everything else in the package is
// internal: the commands, the benchmark, echo and IPC bindings, the raw addon.
export { Ring, RingClosedError, AbortError, isIoUringUnavailable, BufferRing, RingStream, RingSocket } from './ring/index.js';
export type { RingOptions, RingFeatures, RingStats, RingAddress, OpOptions, ReadvRequest, ReadvBatchError, RecvHandlers, RecvMultishotOptions, RingSocketOptions, RingSocketConstructor } from './ring/index.js';
export { onRing } from './ring/server.js';
export type { OnRingOptions, RingServable } from './ring/server.js';
export { ringConnector } from './ring/client.js';
export type { RingConnectorOptions, RingConnectTarget, RingConnect } from './ring/client.js';
export { Channel } from './ring/channel.js';
export type { ChannelOptions, ChannelMessage, ChannelEvents } from './ring/channel.js';
export {
  readvSync,
  writevSync,
  socket,
  socketpair,
  bind,
  listen,
  accept,
  connect,
  shutdown,
  getsockname,
  getpeername,
  setsockopt,
  getsockopt,
  close,
  sendmsg,
  recvmsg,
  peerCredentials,
  setPassCredentials,
  waitFd,
  shmOpen,
  shmUnlink,
  ftruncate,
  mmap,
  munmap,
  memfdCreate,
  addSeals,
  getSeals,
  seals,
  setNonBlocking,
  flock,
} from './syscalls.js';
export type { Mapping } from './syscalls.js';
export { constants, isErrnoException, liveObjects } from './native.js';
export type {
  AddressInfo,
  NativeConstants as Constants,
  Credentials,
  ErrnoException,
  LiveObjects,
  RecvOptions,
  RecvResult,
  SendOptions,
  ShmFlags,
  InetAddress,
  SocketAddress,
  SocketFamily,
  SocketOptions,
  SocketType,
} from './native.js';

