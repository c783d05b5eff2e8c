/** pass@k, estimated without bias from n runs with c successes: 1 − C(n−c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (n <= 0 || k <= 0 || k > n) throw new Error(`pass@k needs 0 < k <= n (n=${n}, k=${k})`);
  if (n - c < k) return 1;
  // the product form of the ratio: no huge binomials
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}
