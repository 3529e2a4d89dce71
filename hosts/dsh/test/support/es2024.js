// DSH 0.1.0-rc.8 targets Node >= 22 (dsh-agent-loop calls Promise.withResolvers). On Node 20 the
// tests add that one standard ES2024 function, exactly as specified (ECMA-262 27.2.4.8); nothing
// of the host is replaced. Import this module first.
if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers () {
      let resolve, reject
      const promise = new this((res, rej) => { resolve = res; reject = rej })
      return { promise, resolve, reject }
    },
  })
}
