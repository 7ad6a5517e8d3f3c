import fs from 'node:fs';
const shim = new URL('./fs.mjs', import.meta.url).href;
export async function resolve(specifier, context, next) {
  if (typeof fs.globSync !== 'function' && (specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
