// Paths inside an AgentSpec: arrays like ["sub_agents", 0, "tools", 1, "name"], shown
// dotted ("sub_agents.0.tools.1.name") as the API reports them.

export const CHILD_KEYS = ["sub_agents", "agent_tools"];

export function getAt(root, path) {
  let node = root;
  for (const part of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = node[part];
  }
  return node;
}

export function dotted(path) {
  return path.join(".");
}

export function parseDotted(text) {
  if (!text) return [];
  return text.split(".").map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

/** The agent node a path points into: the longest prefix made of (child key, index) pairs. */
export function nodePathOf(path) {
  const node = [];
  for (let i = 0; i + 1 < path.length; i += 2) {
    if (!CHILD_KEYS.includes(path[i]) || typeof path[i + 1] !== "number") break;
    node.push(path[i], path[i + 1]);
  }
  return node;
}

/** Character ranges of every path in JSON.stringify(value, null, 2), by dotted path. */
export function locate(value) {
  const ranges = new Map();
  let text = "";
  const write = (v, path, indent) => {
    const start = text.length;
    if (Array.isArray(v) && v.length) {
      text += "[";
      v.forEach((item, i) => {
        text += `${i ? "," : ""}\n${indent}  `;
        write(item, [...path, i], `${indent}  `);
      });
      text += `\n${indent}]`;
    } else if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) {
      text += "{";
      Object.entries(v).forEach(([key, item], i) => {
        text += `${i ? "," : ""}\n${indent}  ${JSON.stringify(key)}: `;
        write(item, [...path, key], `${indent}  `);
      });
      text += `\n${indent}}`;
    } else {
      text += JSON.stringify(v);
    }
    ranges.set(dotted(path), [start, text.length]);
  };
  write(value, [], "");
  return { text, ranges };
}

/** Dotted paths where after differs from before: each changed value, or the array whose
 * length changed; [""] when the two are not both objects. */
export function changedPaths(before, after, path = []) {
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  const objects = [before, after].every((v) => v !== null && typeof v === "object");
  if (!objects || Array.isArray(before) !== Array.isArray(after) || (Array.isArray(before) && before.length !== after.length)) {
    return [dotted(path)];
  }
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].flatMap((key) => changedPaths(before[key], after[key], [...path, Array.isArray(before) ? Number(key) : key]));
}
