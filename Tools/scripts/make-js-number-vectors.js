// Writes Number-to-String vectors from JavaScript itself: one line per value,
// "<16 hex digits of the IEEE-754 bits> <String(value)>". Deterministic (seeded).
// Usage: node Tools/scripts/make-js-number-vectors.js > Packages/Core/Tests/Fixtures/js-number-vectors.txt
let s = 0x2545F4914F6CDD1Dn;
function next() { // xorshift64*
  s ^= s >> 12n; s ^= (s << 25n) & 0xFFFFFFFFFFFFFFFFn; s ^= s >> 27n;
  return (s * 0x2545F4914F6CDD1Dn) & 0xFFFFFFFFFFFFFFFFn;
}
const buf = new DataView(new ArrayBuffer(8));
const out = [];
function add(v) {
  buf.setFloat64(0, v);
  const hex = buf.getBigUint64(0).toString(16).padStart(16, "0");
  out.push(hex + " " + String(v));
}
for (let i = 0; i < 600; i++) {
  buf.setBigUint64(0, next());
  const v = buf.getFloat64(0);
  if (Number.isFinite(v)) add(v);
}
for (let e = -30; e <= 30; e++) { add(Math.pow(10, e)); add(1.5 * Math.pow(10, e)); add(-1.2345678901234567 * Math.pow(10, e)); }
for (let i = 0; i < 300; i++) {
  const r = Number(next() % 10000000n) / Math.pow(10, Number(next() % 9n));
  add(r);
}
for (let i = 0; i < 100; i++) add(Number(next() % (1n << 62n)));
add(0); add(-0); add(Number.MAX_SAFE_INTEGER); add(Number.MAX_SAFE_INTEGER + 1); add(Number.MIN_VALUE); add(Number.MAX_VALUE);
console.log(out.join("\n"));
