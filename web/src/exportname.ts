// Names of exported files.

interface Named { name: string }

/**
 * The start of an export's file name, after the preset of the data exported:
 * the result on screen (sent, made from sentPreset) once there is one, else
 * the inputs. The preset picked since its run is not that data's.
 */
export function fileBase(s: { sent: unknown; sentPreset: Named | null; preset: Named | null }): string {
  const p = s.sent ? s.sentPreset : s.preset;
  return `retrystorm-${p?.name ?? 'scenario'}`;
}
