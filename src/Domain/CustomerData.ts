/**
 * What the AI may know about the customer (docs/ai.md, "Customer data"): nothing, unless the
 * integration allows it field by field in `channelsSettings.customerData`, a list of paths:
 *
 * - a customer field: `firstName`, `lastName`, `email`, `phoneNumber`, `location`, `userId`;
 * - `customFields.<key>` (the customer's custom fields), `account.<field>` (`id`, `name`, `email`,
 *   `website`) and `account.customFields.<key>`;
 * - `requestContext.<key>`: from the `requestContext` of the latest customer message that has one.
 *
 * `<key>` may be `*` for every key. The values allowed are handed to the model as data (a JSON object
 * in its own section of the system prompt), never as instructions. Anything else in the list is a 422
 * located at the entry.
 */
import * as Effect from "effect/Effect"
import type { Customer } from "./Customer.js"
import { InvalidInput } from "./Errors.js"
import type { JsonObject } from "./Primitives.js"

const CUSTOMER_FIELDS = ["firstName", "lastName", "email", "phoneNumber", "location", "userId"] as const
const ACCOUNT_FIELDS = ["id", "name", "email", "website"] as const

const PATH = new RegExp(
  `^(?:${CUSTOMER_FIELDS.join("|")}|(?:customFields|account\\.customFields|requestContext)\\.(?:\\*|[A-Za-z0-9_-]{1,64})` +
    `|account\\.(?:${ACCOUNT_FIELDS.join("|")}))$`
)

/** The allow-list of an integration; empty when unset (or unreadable: checked when saved). */
export const customerDataSetting = (channelsSettings: JsonObject): ReadonlyArray<string> => {
  const value = channelsSettings["customerData"]
  return Array.isArray(value) ? value.filter((path): path is string => typeof path === "string" && PATH.test(path)) : []
}

/** Checks `channelsSettings.customerData` when an integration is saved. */
export const checkCustomerDataSetting = (channelsSettings: JsonObject): Effect.Effect<void, InvalidInput> => {
  const value = channelsSettings["customerData"]
  if (value === undefined) return Effect.void
  if (!Array.isArray(value)) {
    return InvalidInput.one(["channelsSettings", "customerData"], "Should be a list of field paths", "list_type")
  }
  const problems = value.flatMap((path: unknown, i) =>
    typeof path === "string" && PATH.test(path) ? [] : [{
      path: ["channelsSettings", "customerData", i],
      message: `Should be one of ${CUSTOMER_FIELDS.join(", ")}, customFields.<key>, account.<${
        ACCOUNT_FIELDS.join("|")
      }>, account.customFields.<key> or requestContext.<key> (<key> may be *)`,
      type: "value_error"
    }]
  )
  return problems.length === 0 ? Effect.void : Effect.fail(new InvalidInput({ problems }))
}

const isObject = (value: unknown): value is { readonly [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `source[key]`, or every entry with `*`; nothing for null or absent values. */
const pick = (source: unknown, key: string): ReadonlyArray<readonly [string, unknown]> => {
  if (!isObject(source)) return []
  if (key === "*") return Object.entries(source).filter(([, v]) => v !== null && v !== undefined)
  const value = source[key]
  return value === null || value === undefined ? [] : [[key, value]]
}

/**
 * The allowed values, keyed by their path (`firstName`, `customFields.plan`, `requestContext.page`), or
 * null when nothing is allowed or known: the model then reads nothing about the customer.
 */
export const allowedCustomerData = (input: {
  readonly allowed: ReadonlyArray<string>
  readonly customer: Customer | null
  readonly requestContext: { readonly [key: string]: unknown } | null
}): { readonly [path: string]: unknown } | null => {
  const { customer } = input
  const data: Record<string, unknown> = {}
  for (const path of input.allowed) {
    const [head, ...rest] = path.split(".")
    const tail = rest.join(".")
    const found: ReadonlyArray<readonly [string, unknown]> = head === "requestContext"
      ? pick(input.requestContext, tail)
      : customer === null
      ? []
      : head === "customFields"
      ? pick(customer.customFields, tail)
      : head === "account" && rest[0] === "customFields"
      ? pick(customer.account?.customFields, rest.slice(1).join("."))
      : head === "account"
      ? pick(customer.account, tail)
      : pick(customer, path)
    const prefix = path.endsWith("*") ? path.slice(0, -1) : null
    for (const [key, value] of found) data[prefix === null ? path : `${prefix}${key}`] = value
  }
  return Object.keys(data).length === 0 ? null : data
}
