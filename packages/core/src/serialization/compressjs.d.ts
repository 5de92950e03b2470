// compressjs ships no types; bzip2-compression.ts describes the part it uses.
declare module 'compressjs';
