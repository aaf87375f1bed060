// bench api's channel group, in a worker thread: the receiver of the MessagePort row and of the
// channel's worker row and of the SharedArrayBuffer ring's (api-channel-peer.ts). workerData: the
// worker's end of a channel socket, the MessagePort the data come on and the ring's memory;
// control on parentPort.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { servePeer, type PeerReply } from './api-channel-peer.js';

const { channelSocket, port, sab } = workerData as { channelSocket: number; port: MessagePort; sab: SharedArrayBuffer };
await servePeer({
  on: (listener) => parentPort!.on('message', listener),
  send: (reply: PeerReply) => parentPort!.postMessage(reply),
}, channelSocket, { port, sab });
