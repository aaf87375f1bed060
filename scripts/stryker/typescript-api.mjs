// Loaded into Stryker's checker processes (stryker.config.mjs: checkerNodeArgs). The checker
// compiles through TypeScript's JavaScript API (ts.createSolutionBuilder...), which TypeScript 7,
// the project's compiler, no longer has: its `typescript` package exports only its version. So
// the checker's `import ts from 'typescript'` is pointed at TypeScript 6 (the devDependency
// `typescript-api`), the last line with that API; everything else keeps TypeScript 7.
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier === 'typescript' && context.parentURL?.includes('/@stryker-mutator/')) return next('typescript-api', context);
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, import.meta.url);
