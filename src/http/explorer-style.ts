// The explorer page's base CSS: header, tree, message table and buttons.

/** The page's own CSS (layout, tree, message table); each part module brings its own. */
export const BASE_STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { display: flex; gap: 12px; align-items: center; padding: 10px 16px; background: #1d3557; color: #fff; }
header h1 { font-size: 18px; margin: 0 16px 0 0; }
header input { padding: 4px 6px; }
#refreshed { margin-left: auto; color: #c9d6e8; font-size: 13px; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
main { padding: 12px 16px; }
table { border-collapse: collapse; width: 100%; background: #fff; margin-bottom: 14px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.entity { cursor: pointer; }
tr.entity.selected { background: #e7f0fb; }
td.alert { color: #b00020; font-weight: 700; }
nav button { padding: 5px 12px; margin-right: 4px; border: 1px solid #b8c0c8; background: #fff; cursor: pointer; }
nav button.on { background: #1d3557; color: #fff; }
.actions { margin: 10px 0; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.actions button { padding: 5px 12px; cursor: pointer; }
button.danger { color: #b00020; }
pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 10em; overflow: auto; font-size: 12px; }
#status { min-height: 1.4em; margin: 6px 0; }
#status.error { color: #b00020; }
.muted { color: #6b7580; }
#tree-pane { max-height: 45vh; overflow: auto; margin-bottom: 12px; }
#filter { padding: 4px 6px; margin-bottom: 6px; width: 260px; }
tr.topic td:first-child { font-weight: 600; }
tr.topic { cursor: pointer; }
tr.topic.selected { background: #e7f0fb; }
tr.subscription td:first-child { padding-left: 26px; }
.kind { font-size: 11px; color: #6b7580; margin-left: 6px; }
.rules { font: 11px/1.3 ui-monospace, monospace; color: #4a545e; }
td.dlq { cursor: pointer; text-decoration: underline dotted; }
tr.message { cursor: pointer; }
tr.message.open { background: #fff7e0; }
`;
