'use strict'
// scripts/layering.js: finds a cycle between modules, and the crate has none.

const { dependencies, cycles } = require('../scripts/layering')

test('a cycle between modules is found, with every module on it', () => {
  const deps = new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a', 'd'])], ['d', new Set()]])
  expect(cycles(deps)).toEqual([['a', 'b', 'c']])
  deps.get('c').delete('a')
  expect(cycles(deps)).toEqual([])
})

test("the crate's modules depend on each other in no cycle", () => {
  const deps = dependencies()
  expect(deps.get('compact')).toEqual(expect.any(Set))
  expect(deps.get('compact').has('writing')).toBe(true)
  expect(cycles(deps)).toEqual([])
})
