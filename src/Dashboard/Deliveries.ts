import type { DashboardRoute, DashboardServices } from "./Page.js"

export const DeliveryRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = []
