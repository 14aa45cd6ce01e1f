// Dependency rules for src/ (dependency-cruiser), run by `npm test`. The layers, from the wire down:
//   cli → app → amqp, http → broker → store;   filters, auth, config/types, log are leaves any layer may use;
//   contract (the admin API's reply types) is a leaf the server, the CLI and the explorer share.
// Kept under test/ so the top level stays as the layout fixes it.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'A cycle makes two modules one; split out what both need.', from: {}, to: { circular: true } },
    {
      name: 'broker-is-domain',
      severity: 'error',
      comment: 'The domain knows neither the wire nor the disk: no rhea, no lmdb, no transport, no config loader.',
      from: { path: '^src/broker/' },
      to: { path: ['^src/(amqp|http|cli|app|bench)/', '^src/store/lmdb/', '^src/config/load', 'node_modules/(rhea|broker-rhea|lmdb)/'] },
    },
    {
      name: 'only-amqp-knows-rhea',
      severity: 'error',
      comment: 'src/amqp is the only code that speaks AMQP through rhea (the benchmark is a separate client program).',
      from: { path: '^src/', pathNot: '^src/(amqp|bench)/' },
      to: { path: 'node_modules/(rhea|broker-rhea)/' },
    },
    {
      name: 'broker-rhea-through-one-module',
      severity: 'error',
      comment: "The broker's own rhea copy is loaded in src/amqp/rhea.ts only, where every reach into its internals lives.",
      from: { path: '^src/', pathNot: '^src/amqp/rhea\\.ts$' },
      to: { path: 'node_modules/broker-rhea/' },
    },
    {
      name: 'broker-uses-its-own-rhea',
      severity: 'error',
      comment: 'The broker never loads the rhea clients share: its patches must not reach them.',
      from: { path: '^src/amqp/' },
      to: { path: 'node_modules/rhea/' },
    },
    {
      name: 'only-store-knows-lmdb',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/store/lmdb/' },
      to: { path: 'node_modules/lmdb/' },
    },
    {
      name: 'store-below-broker',
      severity: 'error',
      comment: 'The store is the bottom layer; the row types it stores belong to it.',
      from: { path: '^src/store/' },
      to: { path: '^src/(broker|amqp|http|cli|app|filters)/' },
    },
    {
      name: 'filters-are-pure',
      severity: 'error',
      comment: 'The rule engine is pure: it sees only its own modules and the rule shapes config declares.',
      from: { path: '^src/filters/' },
      to: { path: '^src/(?!filters/|config/types)' },
    },
    {
      name: 'transports-do-not-load-config',
      severity: 'error',
      comment: 'Only the composition root (app) and the CLI read config files; the rest receive settings.',
      from: { path: '^src/(amqp|http|broker|store)/' },
      to: { path: '^src/config/load' },
    },
    {
      name: 'one-error-table',
      severity: 'error',
      comment: 'The error table sits between the transports and what fails: it knows failure codes, not transports.',
      from: { path: '^src/errors/' },
      to: { path: '^src/(?!errors/|broker/errors|filters/errors|auth/sas)' },
    },
    {
      name: 'domain-knows-no-wire-errors',
      severity: 'error',
      from: { path: '^src/(broker|filters|store|auth)/' },
      to: { path: '^src/errors/' },
    },
    {
      name: 'no-upward-imports',
      severity: 'error',
      comment: 'Nothing below the composition root imports it or the CLI.',
      from: { path: '^src/(amqp|http|broker|store|filters|auth|config|log)/' },
      to: { path: '^src/(app|cli)/' },
    },
    {
      name: 'transports-reach-the-broker-through-its-ports',
      severity: 'error',
      comment:
        'The HTTP side manages and observes the broker through ports.ts (ManagementPort, ObservationPort; read-only ' +
        'snapshots) and the AMQP side moves messages through messaging-port.ts (MessagingPort), never through its ' +
        'registry, indexes or collaborators. Besides the ports they may import the ' +
        "broker's public leaf modules, which hold no broker state: types.ts (the message shapes both transports " +
        'share), errors.ts (what the ports throw; errors/table.ts maps it), runtime/limits.ts (the named request ' +
        'bounds every transport checks, constants only), runtime/clock.ts (the Clock interface and the system ' +
        "clock, for the HTTP side's own timers) and runtime/faults.ts (users' fault injection: the composition " +
        'root makes it, the testing API arms it, the AMQP side consults it; the domain never imports it).',
      from: { path: '^src/(http|amqp)/' },
      to: { path: '^src/broker/', pathNot: '^src/broker/(ports|messaging-port|types|errors|runtime/(limits|clock|faults))\\.ts$' },
    },
    {
      name: 'http-and-amqp-are-siblings',
      severity: 'error',
      from: { path: '^src/(http|cli)/' },
      to: { path: '^src/amqp/' },
    },
    {
      name: 'explorer-is-browser-code',
      severity: 'error',
      comment:
        "The explorer's modules run in the browser: they import only each other (no Node, no broker code) and reach the broker over its HTTP API. " +
        'The one exception is src/contract/, the admin API reply shapes the server and the CLI share with it, and only type-only ' +
        '(the rule below): a type import is erased when vite bundles the page, so no code outside src/explorer/ reaches the browser.',
      from: { path: '^src/explorer/' },
      to: { pathNot: ['^src/explorer/', '^src/contract/'] },
    },
    {
      name: 'explorer-reads-the-contract-type-only',
      severity: 'error',
      comment: 'The explorer may name the shared admin API types (src/contract/), never load a module from there.',
      from: { path: '^src/explorer/' },
      to: { path: '^src/contract/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'contract-is-a-leaf',
      severity: 'error',
      comment: 'src/contract/ holds the admin API shapes (types only) that the server, the CLI and the browser share: it imports nothing.',
      from: { path: '^src/contract/' },
      to: { pathNot: '^src/contract/' },
    },
    {
      name: 'nothing-loads-the-explorer',
      severity: 'error',
      comment: 'The broker serves the built page (dist/explorer) as files; no server module imports its sources.',
      from: { path: '^src/', pathNot: '^src/explorer/' },
      to: { path: '^src/explorer/' },
    },
    {
      name: 'cli-is-a-client',
      severity: 'error',
      comment: 'The admin CLI talks to the broker over HTTP; it shares only auth, config, log and the admin API shapes (src/contract/) with it.',
      from: { path: '^src/cli/' },
      to: { path: '^src/(http|broker|store|amqp)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
