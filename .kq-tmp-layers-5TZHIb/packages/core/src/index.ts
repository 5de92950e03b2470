export const core = 1;
