// A custom kq transport on the file system: queues as directories, claims by atomic rename.
export { FileSystemTransport, createTransport, type FileSystemTransportOptions } from './file-system-transport';
export { FileSystemStore, type FileSystemStoreOptions } from './file-system-store';
