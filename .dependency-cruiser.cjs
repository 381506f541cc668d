/**
 * The layers of docs/architecture.md, enforced in `npm test` (npm run lint:deps).
 * Run-time cycles are refused too; type-only imports are not edges (they vanish at run time).
 */

/**
 * The plumbing under the modules, lowest first (docs/architecture.md's table): each layer imports
 * only the layers before it, so `src/db` imports nothing but the root files, and so on up.
 */
const PLUMBING = [
  ['root', '^src/[^/]+\\.ts$'],
  ['db', '^src/db/'],
  ['outbox', '^src/outbox/'],
  ['events', '^src/events/'],
  ['accounts', '^src/accounts/'],
  ['system', '^src/system/'],
  ['api', '^src/api/'],
  ['sync', '^src/sync/'],
];
/** The composition roots: they put the layers and the modules together, so nothing below imports them (posd.ts, the command, runs main; projector-thread.ts is a chain core's projector thread). */
const COMPOSITION = '^src/(posd|main|daemon|front|projector-thread)\\.ts$';
const plumbingOrder = PLUMBING.map(([name, path], i) => ({
  name: `plumbing-order-${name}`,
  severity: 'error',
  comment: `src/${name === 'root' ? '*.ts' : name} sits below ${PLUMBING.slice(i + 1).map(([n]) => n).join(', ') || 'the modules'}: it imports none of them (docs/architecture.md). Move the shared piece down, or take it as an argument.`,
  from: { path, pathNot: COMPOSITION },
  to: {
    path: [...PLUMBING.slice(i + 1).map(([, p]) => p), '^src/(cli|modules)/', COMPOSITION],
    dependencyTypesNot: ['type-only'],
  },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A run-time import cycle: one of the two must move down a layer or take what it needs as an argument.',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'devices-stand-alone',
      severity: 'error',
      comment: 'devices/ is the driver layer: it imports nothing from src/.',
      from: { path: '^devices/' },
      to: { path: '^src/' },
    },
    {
      name: 'lower-layers-below-modules',
      severity: 'error',
      comment: 'The plumbing under the modules (db, outbox, events, accounts, api, sync, system and the root files) never imports a module: modules declare what they add (see src/api/module.ts). The composition roots (main, daemon, and front for a central-front) put them together.',
      from: { path: '^src/(db|outbox|events|accounts|api|sync|system)/|^src/[^/]+\\.ts$', pathNot: '^src/(posd|main|daemon|front|projector-thread)\\.ts$' },
      to: { path: '^src/modules/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'module-through-its-front',
      severity: 'error',
      comment:
        'A module reaches another only through its index.ts, service.ts or schema.ts (a sub-module such as terminals/commands/ or bookings/class-sessions/ has fronts of its own).',
      from: { path: '^src/modules/([^/]+)/' },
      to: {
        path: '^src/modules/([^/]+)/',
        pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/(index|service|schema)\\.ts$', '^src/modules/[^/]+/[^/]+/(index|service|schema)\\.ts$'],
      },
    },
    ...plumbingOrder,
    {
      name: 'sync-store-apart-from-central',
      severity: 'error',
      comment: 'src/sync/store/ is the store box\'s side of sync: it never imports the central\'s (central/, pg/); what both need lives in shared/.',
      from: { path: '^src/sync/store/' },
      to: { path: '^src/sync/(central|pg)/' },
    },
    {
      name: 'sync-central-apart-from-store',
      severity: 'error',
      comment: 'src/sync/central/ and pg/ are the central\'s side of sync: they never import the store box\'s (store/); what both need lives in shared/.',
      from: { path: '^src/sync/(central|pg)/' },
      to: { path: '^src/sync/store/' },
    },
    {
      name: 'sync-shared-below-roles',
      severity: 'error',
      comment: 'src/sync/shared/ (wire, registry, state, summary) is what both roles use: it imports neither.',
      from: { path: '^src/sync/shared/' },
      to: { path: '^src/sync/(store|central|pg)/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.cjs'] },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
