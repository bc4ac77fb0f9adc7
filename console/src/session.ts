// The pasted key, for this tab only: sessionStorage (gone when the tab closes), never
// a cookie (sent to the server on its own) nor the URL (kept in history and logs).
const SLOT = 'petstore.apiKey'

export const rememberedKey = (): string | undefined => sessionStorage.getItem(SLOT) ?? undefined
export const rememberKey = (key: string) => sessionStorage.setItem(SLOT, key)
export const forgetKey = () => sessionStorage.removeItem(SLOT)
