// Topology: the model derived from the catalog, and the idempotent provisioner that applies it.
export { runProvisionCli } from './cli.ts';
export * from './model.ts';
export * from './names.ts';
export * from './derive.ts';
export * from './provision.ts';
export * from './rights.ts';
