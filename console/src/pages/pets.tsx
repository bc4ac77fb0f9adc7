// Pets: the inventory as three figures, a table that pages with the API's cursor and
// filters by status, category and name, and add, edit (If-Match: the version the form
// was opened on) and delete. Categories are shown and chosen by name.
import { useEffect, useRef, useState } from 'preact/hooks'
import type { Category, Inventory, Page, Pet, PetFilters, PetStatus } from '../api.js'
import { ActionButton, ErrorNote, missingScope, NeedsScope, Outcome, Pager, StatusFilter, useCursors, useSession } from '../ui.js'

const STATUSES: PetStatus[] = ['available', 'pending', 'sold']
/** The API's `q`: at least 3 characters (a trigram index answers it). */
const NAME_MIN = 3

export function Pets() {
  const session = useSession()
  // Bumped by every change made here, so that the inventory is read again.
  const [changes, setChanges] = useState(0)
  // Read once: the filter and the forms name categories; without categories:read, ids.
  const [categories, setCategories] = useState<Category[]>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    if (missingScope(session, 'listCategories') !== undefined) setCategories([])
    else
      session.api.listCategories().then(setCategories, (failure: unknown) => {
        setError(failure)
        setCategories([])
      })
  }, [])
  return (
    <NeedsScope operation="listPets">
      <InventoryFigures changes={changes} />
      <ErrorNote error={error} />
      {categories && <PetList categories={categories} onChanged={() => setChanges((n) => n + 1)} />}
    </NeedsScope>
  )
}

function InventoryFigures({ changes }: { changes: number }) {
  const { api } = useSession()
  const [inventory, setInventory] = useState<Inventory>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    api.getInventory().then(setInventory, setError)
  }, [changes])
  return (
    <section aria-labelledby="inventory">
      <h2 id="inventory">Inventory</h2>
      <ErrorNote error={error} />
      {inventory && (
        <dl class="figures">
          {STATUSES.map((status) => (
            <div key={status}>
              <dt>{status}</dt>
              <dd data-testid={`inventory-${status}`}>{inventory[status]}</dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  )
}

function PetList({ categories, onChanged }: { categories: Category[]; onChanged: () => void }) {
  const session = useSession()
  const { api } = session
  const [filters, setFilters] = useState<PetFilters>({})
  const pages = useCursors()
  const { cursor, reset } = pages
  const [page, setPage] = useState<Page<Pet>>()
  const [error, setError] = useState<unknown>()
  const [done, setDone] = useState<string>()
  const [editing, setEditing] = useState<{ pet: Pet; etag: string }>()
  const [confirming, setConfirming] = useState<number>()
  // Only the latest read is shown: an earlier one (other filters) may answer after it.
  const latest = useRef(0)

  const load = async () => {
    const read = ++latest.current
    try {
      const answer = await api.listPets({ ...filters, cursor, limit: 20 })
      if (read !== latest.current) return
      setPage(answer)
      setError(undefined)
    } catch (failure) {
      if (read === latest.current) setError(failure)
    }
  }
  useEffect(() => {
    void load()
  }, [filters, cursor])

  const act = async (what: () => Promise<unknown>, message: string) => {
    try {
      await what()
      onChanged()
      // The list first, then the message: what it says is on the page when it shows.
      await load()
      setDone(message)
      setError(undefined)
    } catch (failure) {
      setDone(undefined)
      setError(failure)
    }
  }
  const categoryName = (id: number) => categories.find((category) => category.id === id)?.name ?? String(id)

  return (
    <section aria-labelledby="pets">
      <h2 id="pets">Pets</h2>
      <AddPet categories={categories} onAdded={(pet) => act(async () => pet, `Added ${pet.name} (id ${pet.id}).`)} />
      <FilterPets
        categories={categories}
        onChange={(next) => {
          // A cursor is bound to the filters it was made with: new filters start at the first page.
          setFilters(next)
          reset()
        }}
      />
      <Outcome done={done} error={error} />
      {editing && (
        <EditPet
          version={editing}
          categories={categories}
          onClose={() => setEditing(undefined)}
          onSaved={(pet) => {
            setEditing(undefined)
            void act(async () => pet, `Saved ${pet.name}.`)
          }}
        />
      )}
      <table>
        <caption class="note">{page ? `${page.items.length} ${page.items.length === 1 ? 'pet' : 'pets'} on this page` : 'Loading…'}</caption>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Name</th>
            <th scope="col">Category</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {page?.items.map((pet) => (
            <tr key={pet.id} data-pet-id={pet.id}>
              <td>{pet.id}</td>
              <td class="pet-name">{pet.name}</td>
              <td class="pet-category">{categoryName(pet.categoryId)}</td>
              <td>{pet.status}</td>
              <td>
                <ActionButton
                  operation="updatePet"
                  label={`Edit ${pet.name}`}
                  onClick={async () => {
                    try {
                      setEditing(await api.readPet(pet.id))
                    } catch (failure) {
                      setError(failure)
                    }
                  }}
                >
                  Edit
                </ActionButton>{' '}
                {confirming === pet.id ? (
                  <ActionButton operation="deletePet" label={`Really delete ${pet.name}`} onClick={() => act(() => api.deletePet(pet.id), `Deleted ${pet.name}.`)}>
                    Really delete?
                  </ActionButton>
                ) : (
                  <ActionButton operation="deletePet" label={`Delete ${pet.name}`} onClick={() => setConfirming(pet.id)}>
                    Delete
                  </ActionButton>
                )}{' '}
                {pet.status === 'available' && (
                  <ActionButton operation="placeOrder" label={`Reserve ${pet.name}`} onClick={() => act(() => api.placeOrder(pet.id), `Reserved ${pet.name}: see Orders.`)}>
                    Reserve
                  </ActionButton>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label="Pages of pets" class="pager" pages={pages} nextCursor={page?.nextCursor} />
      {missingScope(session, 'createPet') === undefined ? null : <p class="note">Adding, editing and deleting pets needs the pets:write scope.</p>}
    </section>
  )
}

/** The table's filters: status, category (by name) and part of the name, applied as they change. */
function FilterPets({ categories, onChange }: { categories: Category[]; onChange: (filters: PetFilters) => void }) {
  const session = useSession()
  const [status, setStatus] = useState<PetStatus | ''>('')
  const [categoryId, setCategoryId] = useState('')
  const [name, setName] = useState('')
  const q = name.trim()
  // Characters as the API counts them: code points (an emoji is one, not two UTF-16 units).
  const typed = [...q].length
  const missing = missingScope(session, 'listCategories')
  // The name is applied once typing pauses, and only from 3 characters on (the API's minimum).
  const applied = typed >= NAME_MIN ? q : ''
  const [nameFilter, setNameFilter] = useState('')
  useEffect(() => {
    const timer = setTimeout(() => setNameFilter(applied), 250)
    return () => clearTimeout(timer)
  }, [applied])
  const first = useRef(true)
  useEffect(() => {
    if (first.current) {
      first.current = false
      return
    }
    onChange({ ...(status ? { status } : {}), ...(categoryId ? { categoryId: Number(categoryId) } : {}), ...(nameFilter ? { q: nameFilter } : {}) })
  }, [status, categoryId, nameFilter])
  return (
    <form role="search" aria-label="Filter pets" onSubmit={(event) => event.preventDefault()}>
      <StatusFilter statuses={STATUSES} value={status} onChange={setStatus} />
      <label>
        Category
        <select value={categoryId} disabled={missing !== undefined} title={missing && `Needs the ${missing} scope`} onChange={(event) => setCategoryId(event.currentTarget.value)}>
          <option value="">{missing === undefined ? 'any' : `any (needs ${missing})`}</option>
          <CategoryOptions categories={categories} />
        </select>
      </label>
      <label>
        Name contains
        <input type="search" value={name} maxLength={100} aria-describedby="name-filter-note" onInput={(event) => setName(event.currentTarget.value)} />
      </label>
      <p id="name-filter-note" class="note">
        {typed > 0 && typed < NAME_MIN ? `Type at least ${NAME_MIN} characters to filter by name.` : `At least ${NAME_MIN} characters, any part of the name, in any case.`}
      </p>
    </form>
  )
}

/** One option per category, named, its id as the value. */
function CategoryOptions({ categories }: { categories: Category[] }) {
  return (
    <>
      {categories.map((category) => (
        <option key={category.id} value={String(category.id)}>
          {category.name}
        </option>
      ))}
    </>
  )
}

/** A pet's category: chosen by name when the key may read categories, else by id. */
function CategoryField({ categories, value, disabled, onChange }: { categories: Category[]; value: string; disabled?: boolean; onChange: (id: string) => void }) {
  if (categories.length === 0)
    return (
      <label>
        Category id
        <input type="number" min={1} value={value} required disabled={disabled} onInput={(e) => onChange(e.currentTarget.value)} />
      </label>
    )
  return (
    <label>
      Category
      <select value={value} required disabled={disabled} onChange={(e) => onChange(e.currentTarget.value)}>
        <CategoryOptions categories={categories} />
      </select>
    </label>
  )
}

function AddPet({ categories, onAdded }: { categories: Category[]; onAdded: (pet: Pet) => void }) {
  const session = useSession()
  const [name, setName] = useState('')
  const [categoryId, setCategoryId] = useState(String(categories[0]?.id ?? 1))
  const [error, setError] = useState<unknown>()
  const missing = missingScope(session, 'createPet')
  return (
    <form
      aria-label="Add a pet"
      onSubmit={async (event) => {
        event.preventDefault()
        try {
          const pet = await session.api.createPet({ name, categoryId: Number(categoryId) })
          setName('')
          setError(undefined)
          onAdded(pet)
        } catch (failure) {
          setError(failure)
        }
      }}
    >
      <label>
        Name
        <input value={name} required maxLength={200} disabled={missing !== undefined} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <CategoryField categories={categories} value={categoryId} disabled={missing !== undefined} onChange={setCategoryId} />
      <button type="submit" disabled={missing !== undefined} title={missing && `Needs the ${missing} scope`}>
        Add pet{missing && <span class="needs"> (needs {missing})</span>}
      </button>
      <ErrorNote error={error} />
    </form>
  )
}

function EditPet({ version, categories, onClose, onSaved }: { version: { pet: Pet; etag: string }; categories: Category[]; onClose: () => void; onSaved: (pet: Pet) => void }) {
  const { api } = useSession()
  const [name, setName] = useState(version.pet.name)
  const [categoryId, setCategoryId] = useState(String(version.pet.categoryId))
  const [status, setStatus] = useState<PetStatus>(version.pet.status)
  const [error, setError] = useState<unknown>()
  return (
    <form
      aria-label={`Edit pet ${version.pet.id}`}
      class="edit"
      onSubmit={async (event) => {
        event.preventDefault()
        try {
          onSaved(await api.updatePet(version.pet.id, { name, categoryId: Number(categoryId), status }, version.etag))
        } catch (failure) {
          setError(failure)
        }
      }}
    >
      <label>
        Name
        <input value={name} required maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <CategoryField categories={categories} value={categoryId} onChange={setCategoryId} />
      <label>
        Status
        <select value={status} onChange={(e) => setStatus(e.currentTarget.value as PetStatus)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Save</button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
      <ErrorNote error={error} />
    </form>
  )
}
