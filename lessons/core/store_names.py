"""How a Chroma store is named to a reader — `lessons.core.vectorstore.store_location` and the service's health
check (`service.settings`). Marked for the catalogue, so a reader can be shown the name in the course language
(`service.settings.stores_for_reader`). A module of its own because the service names its stores before it may
import chromadb (starting the API stays light)."""

from lessons.core.i18n import N_

EMBEDDED_CHROMA = N_("embedded Chroma in {path}")
CHROMA_SERVER = N_("Chroma server {url}")
