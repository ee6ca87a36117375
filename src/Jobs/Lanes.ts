/**
 * The worker pool's lanes, each declared once and named by the kinds that run in it (`Job.define`'s
 * `lane`). Lanes never wait for each other.
 */
import * as Job from "./Job.js"

/**
 * Work that computes (a reply, a deleted workspace's purge): a few at once per instance
 * (`WORKER_CONCURRENCY`), a few per workspace (`WORKER_CONCURRENCY_PER_WORKSPACE`).
 */
export const replies = Job.lane("replies", {
  concurrency: (config) => config.concurrency,
  perGroup: (config) => config.concurrencyPerWorkspace
})

/**
 * Work that waits on another system (a webhook POST): many at once per instance
 * (`DELIVERY_CONCURRENCY`), a few per integration (`DELIVERY_CONCURRENCY_PER_INTEGRATION`), so that a
 * slow receiver costs only its own.
 */
export const deliveries = Job.lane("deliveries", {
  concurrency: (config) => config.deliveryConcurrency,
  perGroup: (config) => config.deliveryConcurrencyPerIntegration
})
