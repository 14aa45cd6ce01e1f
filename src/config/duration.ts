// ISO-8601 durations as the Service Bus emulator's Config.json uses them ("PT1M", "P1D", "PT0.5S").
// Years count 365 days and months 30 days, as .NET's XmlConvert.ToTimeSpan does.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Regex source accepted by parseDuration: the emulator's pattern plus `PT0.5S` and a lone `P2W`; `P`, `PT`, `P1DT` refused. */
export const DURATION_PATTERN =
  '^P(?:\\d+W|(?!$)(?:\\d+Y)?(?:\\d+M)?(?:\\d+D)?(?:T(?=\\d)(?:\\d+H)?(?:\\d+M)?(?:\\d+(?:\\.\\d+)?S)?)?)$';

const DURATION_RE =
  /^P(?:(\d+)W|(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?)$/;

/** Parses an ISO-8601 duration into milliseconds (rounded to whole ms); null if the text is not a valid duration. */
export function parseDuration(s: string): number | null {
  if (typeof s !== 'string') return null;
  const m = DURATION_RE.exec(s);
  if (m === null) return null;
  const n = (i: number): number => (m[i] === undefined ? 0 : Number(m[i]));
  const ms =
    n(1) * 7 * DAY +
    n(2) * 365 * DAY +
    n(3) * 30 * DAY +
    n(4) * DAY +
    n(5) * HOUR +
    n(6) * MINUTE +
    Math.round(n(7) * SECOND);
  return Number.isFinite(ms) ? ms : null;
}

/** Formats milliseconds as an ISO-8601 duration using D/H/M/S only (300000 -> "PT5M", 90000 -> "PT1M30S", 0 -> "PT0S"). */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`cannot format ${ms} ms as a duration`);
  let rest = Math.round(ms);
  const days = Math.floor(rest / DAY);
  rest -= days * DAY;
  const hours = Math.floor(rest / HOUR);
  rest -= hours * HOUR;
  const minutes = Math.floor(rest / MINUTE);
  rest -= minutes * MINUTE;
  const seconds = Math.floor(rest / SECOND);
  const millis = rest - seconds * SECOND;

  let time = '';
  if (hours > 0) time += `${hours}H`;
  if (minutes > 0) time += `${minutes}M`;
  if (millis > 0) time += `${seconds}.${String(millis).padStart(3, '0').replace(/0+$/, '')}S`;
  else if (seconds > 0) time += `${seconds}S`;

  if (days === 0 && time === '') return 'PT0S';
  return `P${days > 0 ? `${days}D` : ''}${time === '' ? '' : `T${time}`}`;
}
