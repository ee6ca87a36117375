// The child side of `forkWorker`: answers each `{ id, type, payload }` with `{ id, result }` or
// `{ id, error }`, and exits when the parent disconnects.

/** Serves `handlers[type](payload)` (sync or async) over the IPC channel. */
export const serve = (handlers) => {
  process.on("message", async ({ id, type, payload }) => {
    const handler = handlers[type]
    try {
      if (handler === undefined) throw new Error(`unknown request ${type}`)
      const result = await handler(payload)
      process.send({ id, result })
    } catch (error) {
      process.send({ id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
    }
  })
  process.on("disconnect", () => process.exit(0))
}
